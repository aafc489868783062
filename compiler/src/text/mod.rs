//! The textual form: MLIR `tfrt` dialect (SPEC §4).
