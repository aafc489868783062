//! Links the chosen board's memory map, then riscv-rt's linker script (which does not
//! include memory.x itself).
#[path = "../../targets/link_board.rs"]
mod link_board;

fn main() {
    link_board::link_board(&["memory.x", "link.x"]);
}
