#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| uct_fuzz::mm_fifo::run(data));
