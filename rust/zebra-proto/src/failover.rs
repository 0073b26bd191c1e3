//! Which switch a server's job uses, and when it moves to the other one
//! (a standby switch, `ZEBRA_SWITCH_STANDBY`; `docs/RELIABILITY.md`,
//! "A standby switch").
//!
//! A server's hot-path link watches the switch it registered with: the
//! switch answers its REGISTER keep-alive (every second) with a
//! REGISTER_ACK. [`SwitchWatch`] is told of each answer
//! ([`SwitchWatch::on_heard`]); when the switch in use has not answered
//! for `dead_after` and a standby is named, [`SwitchWatch::poll`] moves the
//! job to the other switch. The server then registers there, and once that
//! switch answers, tells its workers (a RESTART naming the switch) that
//! their rounds after the newest one it has an aggregate of go there: the
//! restart path (`Worker::restart`) makes the change exact. Only the
//! server decides, for its own job; the workers follow its word, never
//! their own timeouts, so every party of a job uses the switch its server
//! chose.
//!
//! The switch a job left is not taken back while the one in use answers:
//! a primary that comes back serves again only once the standby in turn
//! stops answering (then the job moves back to it, the same way).

use std::time::Duration;

use crate::time::Timestamp;

/// One of a job's two switches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SwitchChoice {
    /// `ZEBRA_SWITCH`.
    Primary,
    /// `ZEBRA_SWITCH_STANDBY`.
    Standby,
}

impl SwitchChoice {
    /// The other switch.
    pub fn other(self) -> SwitchChoice {
        match self {
            SwitchChoice::Primary => SwitchChoice::Standby,
            SwitchChoice::Standby => SwitchChoice::Primary,
        }
    }

    /// Whether this is the standby.
    pub fn is_standby(self) -> bool {
        self == SwitchChoice::Standby
    }
}

/// A server's watch on the switch its job uses (module documentation).
#[derive(Debug, Clone)]
pub struct SwitchWatch {
    /// Whether a standby is named (without one the job never moves).
    standby: bool,
    current: SwitchChoice,
    dead_after: Duration,
    /// The latest answer of the current switch, or when the watch started
    /// using it.
    heard: Timestamp,
    /// Whether the current switch has answered since the job moved to it.
    answered: bool,
    moves: u64,
}

impl SwitchWatch {
    /// A watch starting at `now` on the primary; it moves only if
    /// `standby` (a standby is named), after `dead_after` without an answer.
    pub fn new(now: Timestamp, standby: bool, dead_after: Duration) -> SwitchWatch {
        SwitchWatch {
            standby,
            current: SwitchChoice::Primary,
            dead_after,
            heard: now,
            answered: false,
            moves: 0,
        }
    }

    /// The switch in use answered (a REGISTER_ACK from its address).
    pub fn on_heard(&mut self, now: Timestamp) {
        self.heard = self.heard.max(now);
        self.answered = true;
    }

    /// Moves the job to the other switch when the one in use has been
    /// silent for `dead_after` and a standby is named: returns the switch
    /// now in use.
    pub fn poll(&mut self, now: Timestamp) -> Option<SwitchChoice> {
        let at = self.poll_at()?;
        if now < at {
            return None;
        }
        self.current = self.current.other();
        self.heard = now;
        self.answered = false;
        self.moves += 1;
        Some(self.current)
    }

    /// When [`poll`](Self::poll) moves the job unless the switch answers
    /// first; `None` without a standby.
    pub fn poll_at(&self) -> Option<Timestamp> {
        self.standby.then(|| self.heard + self.dead_after)
    }

    /// The switch in use.
    pub fn current(&self) -> SwitchChoice {
        self.current
    }

    /// Whether the switch in use has answered since the job moved to it
    /// (or since the start).
    pub fn answered(&self) -> bool {
        self.answered
    }

    /// Moves so far.
    pub fn moves(&self) -> u64 {
        self.moves
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEAD: Duration = Duration::from_millis(3000);

    fn ms(t: u64) -> Timestamp {
        Timestamp(t * 1000)
    }

    #[test]
    fn without_a_standby_the_job_never_moves() {
        let mut w = SwitchWatch::new(ms(0), false, DEAD);
        assert_eq!(w.poll_at(), None);
        assert_eq!(w.poll(ms(1_000_000)), None);
        assert_eq!((w.current(), w.moves()), (SwitchChoice::Primary, 0));
    }

    #[test]
    fn a_switch_that_answers_keeps_the_job() {
        let mut w = SwitchWatch::new(ms(0), true, DEAD);
        for t in (0..60_000).step_by(1000) {
            w.on_heard(ms(t));
            assert_eq!(w.poll(ms(t + 999)), None, "at {t} ms");
        }
        assert_eq!((w.current(), w.moves()), (SwitchChoice::Primary, 0));
        assert!(w.answered());
    }

    #[test]
    fn silence_moves_the_job_at_the_deadline_and_not_before() {
        let mut w = SwitchWatch::new(ms(0), true, DEAD);
        w.on_heard(ms(5_000));
        assert_eq!(w.poll_at(), Some(ms(8_000)));
        assert_eq!(w.poll(ms(7_999)), None);
        assert_eq!(w.poll(ms(8_000)), Some(SwitchChoice::Standby));
        assert!(!w.answered());
        // The standby's deadline counts from the move.
        assert_eq!(w.poll_at(), Some(ms(11_000)));
        assert_eq!(w.poll(ms(10_999)), None);
        w.on_heard(ms(9_000));
        assert!(w.answered());
        assert_eq!(w.poll(ms(11_999)), None);
        assert_eq!((w.current(), w.moves()), (SwitchChoice::Standby, 1));
    }

    #[test]
    fn a_silent_standby_sends_the_job_back_to_the_primary() {
        let mut w = SwitchWatch::new(ms(0), true, DEAD);
        assert_eq!(w.poll(ms(3_000)), Some(SwitchChoice::Standby));
        assert_eq!(w.poll(ms(6_000)), Some(SwitchChoice::Primary));
        assert_eq!(w.poll(ms(9_500)), Some(SwitchChoice::Standby));
        assert_eq!(w.moves(), 3);
    }

    #[test]
    fn an_answer_older_than_the_latest_does_not_move_the_deadline_back() {
        let mut w = SwitchWatch::new(ms(0), true, DEAD);
        w.on_heard(ms(2_000));
        w.on_heard(ms(1_000));
        assert_eq!(w.poll_at(), Some(ms(5_000)));
    }
}
