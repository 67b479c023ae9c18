// Package bench holds the measurements of the performance suite that no other package's
// benchmarks make: stream memory per socket and fan-out latency against the real transport
// (BenchmarkStream), and the bytes of desk state per open and per retained closed RFQ
// (BenchmarkDeskMemory). cmd/benchall runs them beside the other packages' benchmarks and
// cmd/loadgen; docs/performance.md has the results. They report with b.ReportMetric and
// assert nothing about time.
package bench
