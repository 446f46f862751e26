//! A run as the store writes it: every column encoded once ([`Encoded`]), checked for what
//! either engine cannot hold, and its digest — the SHA-256 of everything stored but the label
//! and session — by which the same run saved or uploaded twice is kept once.

use model::measure::MeasureRun;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::error::StoreError;
use crate::schema::{ALL_CPUS, KIND_MEASURE, KIND_NOISE};

/// A run's `runs` row and `run_cpus` rows, encoded.
#[derive(Clone, Debug)]
pub(crate) struct Encoded {
    pub(crate) kind: &'static str,
    pub(crate) schema: String,
    pub(crate) rtlab_version: String,
    pub(crate) status: String,
    pub(crate) started_at: String,
    pub(crate) ended_at: String,
    pub(crate) elapsed_ns: i64,
    pub(crate) hostname: String,
    pub(crate) kernel_release: String,
    pub(crate) arch: String,
    pub(crate) host: String,
    pub(crate) params: String,
    pub(crate) break_event: Option<String>,
    pub(crate) warnings: String,
    pub(crate) load: Option<String>,
    pub(crate) audit: Option<String>,
    pub(crate) import: Option<String>,
    pub(crate) trace: Option<String>,
    pub(crate) build: Option<String>,
    pub(crate) noise: Option<String>,
    pub(crate) workload: Option<String>,
    pub(crate) timerlat: Option<String>,
    /// The gate's verdict on the run by its own criteria (`pass`, `fail`, `unjudgeable`):
    /// derived, so not part of the digest.
    pub(crate) verdict: &'static str,
    pub(crate) cpus: Vec<EncodedCpu>,
    /// Lowercase hexadecimal SHA-256 of the above.
    pub(crate) digest: String,
}

/// One `run_cpus` row, encoded.
#[derive(Clone, Debug)]
pub(crate) struct EncodedCpu {
    pub(crate) cpu: i64,
    pub(crate) tid: Option<i64>,
    pub(crate) raw: String,
    pub(crate) histogram: String,
    pub(crate) spikes: Option<String>,
    pub(crate) series: String,
}

impl Encoded {
    /// Encodes `run`. A value no engine can store (an elapsed time beyond a signed 64-bit
    /// integer, a NUL character in a text column) is refused before anything is written.
    pub(crate) fn of(run: &MeasureRun) -> Result<Encoded, StoreError> {
        let elapsed_ns = i64::try_from(run.elapsed_ns.get()).map_err(|_| StoreError::Encode {
            column: "elapsed_ns",
            why: format!(
                "{} ns does not fit a signed 64-bit integer",
                run.elapsed_ns.0
            ),
        })?;
        let mut cpus = run
            .cpus
            .iter()
            .map(|c| {
                Ok(EncodedCpu {
                    cpu: i64::from(c.cpu),
                    tid: c.tid.map(i64::from),
                    raw: encode("run_cpus.raw_json", &c.raw)?,
                    histogram: encode("run_cpus.histogram_json", &c.histogram)?,
                    spikes: Some(encode("run_cpus.spikes_json", &c.spikes)?),
                    series: encode("run_cpus.series_json", &c.series)?,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        cpus.push(EncodedCpu {
            cpu: ALL_CPUS,
            tid: None,
            raw: encode("run_cpus.raw_json", &run.all.raw)?,
            histogram: encode("run_cpus.histogram_json", &run.all.histogram)?,
            spikes: None,
            series: encode("run_cpus.series_json", &run.all.series)?,
        });
        let mut encoded = Encoded {
            kind: if run.noise.is_some() {
                KIND_NOISE
            } else {
                KIND_MEASURE
            },
            schema: plain("schema", &run.schema)?,
            rtlab_version: plain("rtlab_version", &run.rtlab_version)?,
            status: run.status.as_str().to_string(),
            started_at: plain("started_at", &run.started_at)?,
            ended_at: plain("ended_at", &run.ended_at)?,
            elapsed_ns,
            hostname: plain("hostname", &run.host.hostname)?,
            kernel_release: plain("kernel_release", &run.host.kernel_release)?,
            arch: plain("arch", &run.host.arch)?,
            host: encode("host_json", &run.host)?,
            params: encode("params_json", &run.params)?,
            break_event: encode_opt("break_json", run.break_event.as_ref())?,
            warnings: encode("warnings_json", &run.warnings)?,
            load: encode_opt("load_json", run.load.as_ref())?,
            audit: encode_opt("audit_json", run.audit.as_ref())?,
            import: encode_opt("import_json", run.import.as_ref())?,
            trace: encode_opt("trace_json", run.trace.as_ref())?,
            build: encode_opt("build_json", run.build.as_ref())?,
            noise: encode_opt("noise_json", run.noise.as_ref())?,
            workload: encode_opt("workload_json", run.workload.as_ref())?,
            timerlat: encode_opt("timerlat_json", run.timerlat.as_ref())?,
            verdict: model::gate::judge(run, None).outcome().as_str(),
            cpus,
            digest: String::new(),
        };
        encoded.digest = encoded.compute_digest();
        Ok(encoded)
    }

    /// SHA-256 over every stored column, each as its name, its length and its bytes (or a
    /// marker for NULL), so that no two different rows hash the same stream.
    fn compute_digest(&self) -> String {
        let mut h = Sha256::new();
        let mut put = |name: &str, value: Option<&str>| {
            h.update(name.as_bytes());
            match value {
                Some(v) => {
                    h.update(b"=");
                    h.update((v.len() as u64).to_le_bytes());
                    h.update(v.as_bytes());
                }
                None => h.update(b"!"),
            }
        };
        let elapsed = self.elapsed_ns.to_string();
        for (name, value) in [
            ("kind", Some(self.kind)),
            ("schema", Some(self.schema.as_str())),
            ("rtlab_version", Some(&self.rtlab_version)),
            ("status", Some(&self.status)),
            ("started_at", Some(&self.started_at)),
            ("ended_at", Some(&self.ended_at)),
            ("elapsed_ns", Some(&elapsed)),
            ("host_json", Some(&self.host)),
            ("params_json", Some(&self.params)),
            ("break_json", self.break_event.as_deref()),
            ("warnings_json", Some(&self.warnings)),
            ("load_json", self.load.as_deref()),
            ("audit_json", self.audit.as_deref()),
            ("import_json", self.import.as_deref()),
            ("trace_json", self.trace.as_deref()),
            ("build_json", self.build.as_deref()),
            ("noise_json", self.noise.as_deref()),
            ("workload_json", self.workload.as_deref()),
        ] {
            put(name, value);
        }
        // Added with schema 8: hashed only where present, so a run stored before hashes as
        // it did (an upload of it again is still recognised).
        if let Some(timerlat) = self.timerlat.as_deref() {
            put("timerlat_json", Some(timerlat));
        }
        for c in &self.cpus {
            let cpu = c.cpu.to_string();
            let tid = c.tid.map(|t| t.to_string());
            put("cpu", Some(&cpu));
            put("tid", tid.as_deref());
            put("raw_json", Some(&c.raw));
            put("histogram_json", Some(&c.histogram));
            put("spikes_json", c.spikes.as_deref());
            put("series_json", Some(&c.series));
        }
        hex(&h.finalize())
    }
}

/// The first 12 hexadecimal digits of the SHA-256 of `bytes`: the name a pushed document that
/// is not a run (a monitor history) is answered with, the same for the same bytes.
pub fn document_id(bytes: &[u8]) -> String {
    let mut id = hex(&Sha256::digest(bytes));
    id.truncate(12);
    id
}

/// Lowercase hexadecimal.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A plain text column, refused when it holds a NUL character (PostgreSQL cannot store one;
/// no honest hostname or time has one).
fn plain(column: &'static str, text: &str) -> Result<String, StoreError> {
    if text.contains('\0') {
        return Err(StoreError::Encode {
            column,
            why: "it contains a NUL character".into(),
        });
    }
    Ok(text.to_string())
}

/// JSON text. serde_json writes a NUL inside a string as `\u0000`, so JSON never holds one.
fn encode<T: Serialize + ?Sized>(column: &'static str, value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Encode {
        column,
        why: e.to_string(),
    })
}

fn encode_opt<T: Serialize>(
    column: &'static str,
    value: Option<&T>,
) -> Result<Option<String>, StoreError> {
    value.map(|v| encode(column, v)).transpose()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::{realistic, small};

    #[test]
    fn the_digest_covers_what_is_stored_and_nothing_else() {
        let run = realistic();
        let a = Encoded::of(&run).unwrap().digest;
        assert_eq!(a.len(), 64);
        assert_eq!(Encoded::of(&run.clone()).unwrap().digest, a);
        // Derived statistics are not stored, so they do not change the digest.
        let mut doctored = run.clone();
        doctored.cpus[0].stats.p99_ns = Some(1);
        assert_eq!(Encoded::of(&doctored).unwrap().digest, a);
        // Raw data does.
        let mut other = run.clone();
        other.cpus[0].raw.count += 1;
        assert_ne!(Encoded::of(&other).unwrap().digest, a);
        let mut other = run;
        other.host.hostname.push('x');
        assert_ne!(Encoded::of(&other).unwrap().digest, a);
        assert_ne!(
            Encoded::of(&small("h", "6.1", "2026-01-01T00:00:00Z", &[5]))
                .unwrap()
                .digest,
            a
        );
    }

    #[test]
    fn a_nul_in_a_plain_column_is_refused() {
        let mut run = small("h", "6.1", "2026-01-01T00:00:00Z", &[5]);
        run.host.hostname = "evil\0host".into();
        let err = Encoded::of(&run).unwrap_err();
        assert!(err.to_string().contains("hostname"), "{err}");
    }
}
