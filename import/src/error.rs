//! Import errors: what is wrong and where (the operator's index and name, or the tensor's).

use std::fmt;

/// Why a model could not be imported. The message names the operator (`op #12 CONV_2D`)
/// or tensor (`tensor #3 'conv1/weights'`) at fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportError {
    message: String,
}

impl ImportError {
    /// An error about the model as a whole.
    pub fn model(message: String) -> ImportError {
        ImportError { message }
    }

    /// An error at operator `index` (`name` is its op code's name).
    pub fn op(index: usize, name: &str, message: String) -> ImportError {
        ImportError { message: format!("op #{index} {name}: {message}") }
    }

    /// An error at tensor `index`.
    pub fn tensor(index: usize, name: &str, message: String) -> ImportError {
        ImportError { message: format!("tensor #{index} '{name}': {message}") }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ImportError {}
