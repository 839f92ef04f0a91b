#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| uct_fuzz::sm_addr::run(data));
