//! Reproducible uniform numbers for the parametric bootstraps: xoshiro256++ from a fixed seed,
//! so a result file analysed twice gives the same p-values.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// A seeded source of uniform numbers.
pub(crate) struct Uniform(Xoshiro256PlusPlus);

impl Uniform {
    /// The source for `seed`.
    pub(crate) fn new(seed: u64) -> Uniform {
        Uniform(Xoshiro256PlusPlus::seed_from_u64(seed))
    }

    /// A number in (0, 1), never either end (inverse distribution functions take it).
    pub(crate) fn open01(&mut self) -> f64 {
        loop {
            let u: f64 = self.0.random();
            if u > 0.0 {
                return u;
            }
        }
    }
}
