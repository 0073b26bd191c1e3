//! Byte layouts of ZMTP 3.x, smoltcp style: checked parsers that return
//! errors instead of panicking, and emitters for every structure.

pub mod command;
pub mod frame;
pub mod greeting;
pub mod metadata;

pub use command::{Command, MAX_PING_CONTEXT};
pub use frame::{Frame, FrameHeader};
pub use greeting::{Greeting, GreetingRepr, Mechanism, GREETING_LEN};
pub use metadata::Metadata;
