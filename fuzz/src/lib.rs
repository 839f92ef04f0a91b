pub mod tcp_frames;
pub mod tcp_conn;
