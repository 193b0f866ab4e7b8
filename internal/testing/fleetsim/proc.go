package fleetsim

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ProcStat is what /proc says of a process's memory and processor time now.
type ProcStat struct {
	// RSS is its resident set size (VmRSS), HWM the peak of it over the process's life (VmHWM), in
	// bytes.
	RSS, HWM uint64
	// RSSFile is the part of RSS mapped from files (RssFile), mostly the executable's own code and
	// read-only data: pages any process of the same binary shares, and the kernel may drop and read
	// again. RSS - RSSFile is the process's own memory (heap, stacks).
	RSSFile uint64
	// CPU is the processor time it has used, user and system (utime + stime).
	CPU time.Duration
}

// clockTick is the unit of utime and stime in /proc/<pid>/stat: USER_HZ, which is 100 on every Linux
// architecture Go supports (the kernel converts to it whatever its own HZ).
const clockTick = 10 * time.Millisecond

// ReadProcStat reads /proc/<pid>/status and /proc/<pid>/stat (Linux only).
func ReadProcStat(pid int) (ProcStat, error) {
	var s ProcStat
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, fmt.Errorf("memory of pid %d: %w", pid, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		key, value, _ := strings.Cut(sc.Text(), ":")
		var dst *uint64
		switch key {
		case "VmRSS":
			dst = &s.RSS
		case "VmHWM":
			dst = &s.HWM
		case "RssFile":
			dst = &s.RSSFile
		default:
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return s, fmt.Errorf("memory of pid %d: %s: %w", pid, key, err)
		}
		*dst = kb * 1024
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, fmt.Errorf("CPU time of pid %d: %w", pid, err)
	}
	// The fields after the command name, which is in parentheses and may itself hold spaces or ')':
	// the state is field 3, utime and stime fields 14 and 15.
	i := bytes.LastIndexByte(stat, ')')
	fields := strings.Fields(string(stat[i+1:]))
	if i < 0 || len(fields) < 13 {
		return s, fmt.Errorf("CPU time of pid %d: unexpected /proc/%d/stat %q", pid, pid, stat)
	}
	for _, f := range fields[11:13] {
		ticks, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return s, fmt.Errorf("CPU time of pid %d: %w", pid, err)
		}
		s.CPU += time.Duration(ticks) * clockTick
	}
	return s, nil
}

// Usage is what a Sampler saw of a process.
type Usage struct {
	// PeakRSS is the largest RSS sampled; HWM the kernel's peak RSS as last read (it also sees peaks
	// between samples). Bytes.
	PeakRSS, HWM uint64
	// RSS is the RSS at the last sample, RSSFile the part of it mapped from files (ProcStat.RSSFile).
	RSS, RSSFile uint64
	// CPU is the processor time used up to the last sample, by every process the name had.
	CPU time.Duration
	// Samples counts the successful samples; 0 means the process was never read.
	Samples int
}

// Sampler samples the memory and processor time of named processes at an interval, keeping the
// peaks. A process that exits keeps what was last read of it; a name given a new process (a restart)
// keeps its peaks, and its CPU time adds up over the processes it named.
type Sampler struct {
	interval time.Duration

	mu    sync.Mutex
	pids  map[string]int
	usage map[string]Usage
	// ownCPU is the CPU time of the process a name has now; earlierCPU that of the ones it had before.
	ownCPU, earlierCPU map[string]time.Duration
	errs               map[string]error
}

// NewSampler returns a sampler that reads every interval once Run runs.
func NewSampler(interval time.Duration) *Sampler {
	return &Sampler{interval: interval, pids: map[string]int{}, usage: map[string]Usage{},
		ownCPU: map[string]time.Duration{}, earlierCPU: map[string]time.Duration{}, errs: map[string]error{}}
}

// Watch adds a process under name, or gives the name a new process (a restart).
func (s *Sampler) Watch(name string, pid int) {
	s.mu.Lock()
	if old, ok := s.pids[name]; ok && old != pid {
		s.earlierCPU[name] += s.ownCPU[name]
		s.ownCPU[name] = 0
	}
	s.pids[name] = pid
	s.mu.Unlock()
	s.Sample()
}

// Run samples every interval until ctx is done.
func (s *Sampler) Run(ctx context.Context) {
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.Sample()
		}
	}
}

// Sample reads every process once now.
func (s *Sampler) Sample() {
	s.mu.Lock()
	pids := maps.Clone(s.pids)
	s.mu.Unlock()
	for name, pid := range pids {
		st, err := ReadProcStat(pid)
		s.mu.Lock()
		switch {
		case s.pids[name] != pid:
			// Given another process meanwhile: this reading is of the one before.
		case err != nil:
			s.errs[name] = err
		default:
			s.ownCPU[name] = st.CPU
			u := s.usage[name]
			u.RSS, u.RSSFile, u.CPU, u.HWM = st.RSS, st.RSSFile, s.earlierCPU[name]+st.CPU, max(u.HWM, st.HWM)
			u.PeakRSS = max(u.PeakRSS, st.RSS)
			u.Samples++
			s.usage[name] = u
		}
		s.mu.Unlock()
	}
}

// Usage is what was seen of the named process, and the last error reading it if it was never read.
func (s *Sampler) Usage(name string) (Usage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.usage[name]
	if u.Samples == 0 {
		if err := s.errs[name]; err != nil {
			return u, err
		}
		return u, fmt.Errorf("process %s: not sampled", name)
	}
	return u, nil
}

// Names are the names of the processes watched, sorted.
func (s *Sampler) Names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.pids))
}
