//! The binary side: AST → BEF ([`write`]) and verified BEF → AST ([`decode`]).

mod decode;
mod encode_attr;
mod streams;
mod tables;
mod write;

#[cfg(test)]
mod tests;

pub use decode::decode;
pub use write::{
    ArenaRecord, WriteOptions, kernel_streams, with_arena, with_arena_alt_records, with_arena_records,
    with_section, write, write_with,
};
