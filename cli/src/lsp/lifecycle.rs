//! The session's lifecycle, as LSP 3.17 describes it, in place of `lsp_server::Connection`'s
//! `initialize`/`handle_shutdown` (which end the session on a notification before `initialized`
//! and on any message between `shutdown` and `exit`):
//! * before `initialize`, a request gets `-32002 ServerNotInitialized`; notifications are dropped,
//!   except `exit` (exit code 1);
//! * between the `initialize` answer and `initialized`, everything is served (a client may send
//!   `didOpen` early); a second `initialize` gets `-32600 InvalidRequest`;
//! * after `shutdown`, every request gets `-32600 InvalidRequest` and notifications are dropped
//!   until `exit` (exit code 0); `exit` without `shutdown` exits with 1, as does the end of input.

use lsp_server::{ErrorCode, Message, Request, RequestId, Response};

/// Where the session is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// No `initialize` yet.
    Waiting,
    /// `initialize` answered, `initialized` not yet received.
    Initializing,
    /// `initialized` received.
    Running,
    /// `shutdown` answered: waiting for `exit`.
    ShutDown,
}

/// What to do with a message.
#[derive(Debug)]
pub enum Step {
    /// Initialize the server with this request's params, then answer it.
    Initialize(Request),
    /// The client's `initialized`: report the configuration, register watchers.
    Initialized,
    /// Answer `shutdown` (null) and wait for `exit`.
    Shutdown(RequestId),
    /// Hand the message to the server.
    Serve(Message),
    /// Answer with this error, serve nothing.
    Refuse(Response),
    /// Nothing to do.
    Drop,
    /// End the process with this exit code.
    Exit(u8),
}

/// The step for `message` in `phase`.
pub fn step(phase: Phase, message: Message) -> Step {
    let refuse = |request: &Request, code: ErrorCode, message: &str| {
        Step::Refuse(Response::new_err(request.id.clone(), code as i32, message.to_string()))
    };
    match (phase, message) {
        (Phase::ShutDown, Message::Notification(n)) if n.method == "exit" => Step::Exit(0),
        (_, Message::Notification(n)) if n.method == "exit" => Step::Exit(1),
        (Phase::Waiting, Message::Request(r)) if r.method == "initialize" => Step::Initialize(r),
        (Phase::Waiting, Message::Request(r)) => refuse(
            &r,
            ErrorCode::ServerNotInitialized,
            "the server is not initialized: send `initialize` first",
        ),
        (Phase::ShutDown, Message::Request(r)) => refuse(
            &r,
            ErrorCode::InvalidRequest,
            "the server is shut down: only `exit` is accepted",
        ),
        (_, Message::Request(r)) if r.method == "initialize" => {
            refuse(&r, ErrorCode::InvalidRequest, "`initialize` was already received")
        }
        (_, Message::Request(r)) if r.method == "shutdown" => Step::Shutdown(r.id),
        (Phase::Initializing, Message::Notification(n)) if n.method == "initialized" => Step::Initialized,
        // A second `initialized` is no news.
        (_, Message::Notification(n)) if n.method == "initialized" => Step::Drop,
        (Phase::Waiting | Phase::ShutDown, _) => Step::Drop,
        (Phase::Initializing | Phase::Running, message) => Step::Serve(message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lsp_server::Notification;

    fn request(method: &str) -> Message {
        Message::Request(Request::new(RequestId::from(1), method.into(), serde_json::Value::Null))
    }

    fn notification(method: &str) -> Message {
        Message::Notification(Notification::new(method.into(), serde_json::Value::Null))
    }

    fn code(step: &Step) -> Option<i32> {
        match step {
            Step::Refuse(r) => r.error.as_ref().map(|e| e.code),
            _ => None,
        }
    }

    #[test]
    fn each_phase_answers_as_the_protocol_says() {
        use Phase::*;
        assert!(matches!(step(Waiting, request("initialize")), Step::Initialize(_)));
        assert_eq!(code(&step(Waiting, request("textDocument/hover"))), Some(-32002));
        assert_eq!(code(&step(Waiting, request("shutdown"))), Some(-32002));
        assert!(matches!(
            step(Waiting, notification("textDocument/didOpen")),
            Step::Drop
        ));
        assert!(matches!(step(Waiting, notification("exit")), Step::Exit(1)));
        assert!(matches!(
            step(Initializing, notification("textDocument/didOpen")),
            Step::Serve(_)
        ));
        assert!(matches!(
            step(Initializing, request("textDocument/hover")),
            Step::Serve(_)
        ));
        assert!(matches!(
            step(Initializing, notification("initialized")),
            Step::Initialized
        ));
        assert!(matches!(step(Running, notification("initialized")), Step::Drop));
        assert_eq!(code(&step(Running, request("initialize"))), Some(-32600));
        assert!(matches!(step(Running, request("shutdown")), Step::Shutdown(_)));
        assert!(matches!(step(Running, notification("exit")), Step::Exit(1)));
        assert_eq!(code(&step(ShutDown, request("textDocument/hover"))), Some(-32600));
        assert_eq!(code(&step(ShutDown, request("shutdown"))), Some(-32600));
        assert!(matches!(
            step(ShutDown, notification("textDocument/didOpen")),
            Step::Drop
        ));
        assert!(matches!(step(ShutDown, notification("exit")), Step::Exit(0)));
        let response = Message::Response(Response::new_ok(RequestId::from(1), ()));
        assert!(matches!(step(ShutDown, response), Step::Drop));
    }
}
