// titan_trace_cli: `titan trace` as a standalone binary (for tests and benchmarks, and while the
// titan binary does not link).
namespace titan {
int TraceCommand(int argc, char** argv);
}
int main(int argc, char** argv) { return titan::TraceCommand(argc, argv); }
