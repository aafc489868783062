//! `Chain`: a payload-free value that orders side effects (TFRT's control dependency token).

/// A control-dependency token. A kernel that takes a chain runs after the chain's producer;
/// a kernel that returns one lets later kernels run after it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Chain;
