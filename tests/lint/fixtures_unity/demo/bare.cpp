// A test file without its AQ_UNITY_ID namespace (the lint.unity_ids_selftest fixture; not built).
namespace {
int helper() { return 1; }
}  // namespace
