use super::*;

#[test]
fn placement_falls_back_from_item_to_load_cpus_to_online() {
    let spec = LoadSpec::parse("cpu:50%@1,timer-storm:5").unwrap();
    let online = CpuSet::parse_list("0-3").unwrap();
    let p = placements(&spec, None, &online).unwrap();
    assert_eq!(p, [CpuSet::from_cpus([1]), online.clone()]);
    let p = placements(&spec, Some(&CpuSet::from_cpus([2, 3])), &online).unwrap();
    assert_eq!(p, [CpuSet::from_cpus([1]), CpuSet::from_cpus([2, 3])]);
    let e = placements(&spec, Some(&CpuSet::from_cpus([9])), &online).unwrap_err();
    assert_eq!(
        e.to_string(),
        "load spec '--load-cpus 9': CPU 9 is not online (online: 0-3)"
    );
    let e = placements(&LoadSpec::parse("cpu@7").unwrap(), None, &online).unwrap_err();
    assert!(e.to_string().contains("CPU 7 is not online"));
}

#[test]
fn workdir_is_private_and_unique() {
    use std::os::unix::fs::PermissionsExt;
    let base = tempfile::tempdir().unwrap();
    let a = make_workdir(base.path()).unwrap();
    let b = make_workdir(base.path()).unwrap();
    assert_ne!(a, b);
    let name = a.file_name().unwrap().to_str().unwrap();
    assert!(name.starts_with(NAME_PREFIX), "{name}");
    let mode = std::fs::metadata(&a).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    let e = make_workdir(Path::new("/nonexistent/dir")).unwrap_err();
    assert!(e.to_string().contains("--load-dir"), "{e}");
}
