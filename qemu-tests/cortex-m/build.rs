//! Links the chosen board's memory map before cortex-m-rt's linker script (which includes
//! memory.x).
#[path = "../../targets/link_board.rs"]
mod link_board;

fn main() {
    link_board::link_board(&["link.x"]);
}
