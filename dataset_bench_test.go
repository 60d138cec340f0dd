package main

import (
	"bytes"
	"os"
	"path/filepath"
	"quartet/internal/testkit"
	"runtime"
	"syscall"
	"testing"
)

// BenchmarkReadDataset measures decoding a dataset of 100,000 users and 10,000 products.
func BenchmarkReadDataset(b *testing.B) {
	data := testkit.Dataset(100_000, 10_000)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ReadDataset(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoad measures filling a store from a decoded dataset of 100,000 users and
// 10,000 products: checks, tables and the sorted user indexes.
func BenchmarkLoad(b *testing.B) {
	data := testkit.Dataset(100_000, 10_000)
	for b.Loop() {
		b.StopTimer()
		ds, err := ReadDataset(bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := NewStore().Load(ds); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadFile measures what start-up spends on a large dataset: reading a file
// of 1,000,000 users and 100,000 products and loading it into a new store.
// cpu-ns/op is the CPU time of the whole process, every goroutine's, per load; with
// two processors or more it shows what running parts side by side costs.
func BenchmarkLoadFile(b *testing.B) {
	path := filepath.Join(b.TempDir(), "large.json")
	if err := os.WriteFile(path, testkit.Dataset(1_000_000, 100_000), 0o600); err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	cpu0 := processCPU(b)
	for b.Loop() {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		ds, err := ReadDataset(f)
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		if err := NewStore().Load(ds); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
}

// processCPU is the user and system CPU time the process has used, in nanoseconds.
func processCPU(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
