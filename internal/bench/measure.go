package bench

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"
)

// Machine describes where a benchmark ran.
type Machine struct {
	CPUs       int    `json:"cpus"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	CPUModel   string `json:"cpu_model"`
	Kernel     string `json:"kernel"`
	GoVersion  string `json:"go_version"`
	THP        string `json:"transparent_hugepage"`
	RmemMax    string `json:"net_core_rmem_max"`
}

// ThisMachine reads the machine's description (Linux files; empty strings
// elsewhere).
func ThisMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), GoVersion: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	m.Kernel = readTrimmed("/proc/sys/kernel/osrelease")
	m.THP = readTrimmed("/sys/kernel/mm/transparent_hugepage/enabled")
	m.RmemMax = readTrimmed("/proc/sys/net/core/rmem_max")
	return m
}

func readTrimmed(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(bytes.TrimSpace(b))
}

// processCPU is the CPU time (user + system) the process has used.
func processCPU() time.Duration { return rusageSelf() }

// threadCPU is the CPU time the OS thread tid of this process has used, from
// /proc/self/task/TID/schedstat (0 if unknown).
func threadCPU(tid int) time.Duration {
	if tid <= 0 {
		return 0
	}
	b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/schedstat")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	ns, _ := strconv.ParseInt(f[0], 10, 64)
	return time.Duration(ns)
}

// rss returns the process's resident set size in bytes (VmRSS), 0 if unknown.
func rss() uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// runtimeStats samples the Go runtime's allocation and memory counters.
type runtimeStats struct {
	allocs  uint64 // heap objects allocated, cumulative
	gcs     uint64 // completed GC cycles
	goBytes uint64 // memory mapped by the Go runtime
}

var runtimeSamples = []metrics.Sample{
	{Name: "/gc/heap/allocs:objects"},
	{Name: "/gc/cycles/total:gc-cycles"},
	{Name: "/memory/classes/total:bytes"},
}

func sampleRuntime() runtimeStats {
	s := make([]metrics.Sample, len(runtimeSamples))
	copy(s, runtimeSamples)
	metrics.Read(s)
	get := func(i int) uint64 {
		if s[i].Value.Kind() == metrics.KindUint64 {
			return s[i].Value.Uint64()
		}
		return 0
	}
	return runtimeStats{allocs: get(0), gcs: get(1), goBytes: get(2)}
}
