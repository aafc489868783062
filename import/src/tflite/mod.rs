pub mod lower;
pub mod lut;
pub mod model;
pub mod ops;
pub mod options;
pub mod schema;
