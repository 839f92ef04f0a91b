#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| uct_fuzz::tcp_frames::run(data));
