//! Properties on generated inputs: the engine's invariants and the outcomes it reports.

mod engine;
mod outcome;
