package fleetsim

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// The sampler sees this process's memory grow by what it touches, and its processor time grow by
// what it spends.
func TestSamplerSeesMemoryAndCPU(t *testing.T) {
	s := NewSampler(time.Hour) // sampled by hand below
	s.Watch("self", os.Getpid())
	before, err := s.Usage("self")
	if err != nil {
		t.Fatal(err)
	}
	if before.RSS == 0 || before.HWM < before.RSS {
		t.Fatalf("first sample %+v: want RSS > 0 and HWM >= RSS", before)
	}
	// The test binary's code is mapped from its file; a heap is not.
	if before.RSSFile == 0 || before.RSSFile >= before.RSS {
		t.Fatalf("first sample %+v: want some of RSS, not all, mapped from files", before)
	}

	const grow = 64 << 20
	ballast := make([]byte, grow)
	for i := range ballast {
		ballast[i] = byte(i) // resident only once written
	}
	s.Sample()
	after, _ := s.Usage("self")
	if after.PeakRSS < before.RSS+grow*3/4 || after.HWM < after.PeakRSS {
		t.Errorf("after touching %d MiB: %+v, before %+v; want the peak up by most of it", grow>>20, after, before)
	}
	if own := after.RSS - after.RSSFile; own < grow*3/4 {
		t.Errorf("after touching %d MiB: %d MiB not mapped from files; want most of what was touched", grow>>20, own>>20)
	}
	ballast[len(ballast)-1]++ // keep it alive until sampled

	// Spend processor time until the kernel's count of it moves (it counts in 10 ms ticks).
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	spin := func(ctx context.Context) (bool, error) {
		for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
		}
		s.Sample()
		u, _ := s.Usage("self")
		return u.CPU >= after.CPU+100*time.Millisecond, nil
	}
	if err := wait.PollUntilContextCancel(ctx, time.Millisecond, true, spin); err != nil {
		u, _ := s.Usage("self")
		t.Errorf("CPU time %v after spinning, was %v: want it up by 100ms", u.CPU, after.CPU)
	}
}

// A process that goes keeps what was seen of it; one that takes its name after it (a restart) adds
// its processor time to the first one's, and the peaks stay.
func TestSamplerKeepsWhatItSawOfAGoneProcess(t *testing.T) {
	s := NewSampler(time.Hour)
	if _, err := s.Usage("nothing"); err == nil {
		t.Error("usage of a process never watched has no error")
	}
	s.Watch("self", os.Getpid())
	// Some processor time for the restart below to carry over.
	eventually(t, 20*time.Second, "this process to have used 50ms of CPU", func(context.Context) (bool, error) {
		for end := time.Now().Add(20 * time.Millisecond); time.Now().Before(end); {
		}
		s.Sample()
		u, _ := s.Usage("self")
		return u.CPU >= 50*time.Millisecond, nil
	})
	seen, _ := s.Usage("self")
	s.Watch("self", 1<<30) // no such pid: as if it exited
	s.Sample()
	if got, err := s.Usage("self"); err != nil || got.PeakRSS != seen.PeakRSS || got.CPU != seen.CPU {
		t.Errorf("after the process went: %+v, %v; want what was seen, %+v", got, err, seen)
	}

	child := exec.Command("sleep", "30")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	s.Watch("self", child.Process.Pid) // the restart: a new, small process that has used no CPU yet
	got, err := s.Usage("self")
	if err != nil {
		t.Fatal(err)
	}
	if got.CPU < seen.CPU || got.PeakRSS != seen.PeakRSS || got.RSS >= seen.RSS {
		t.Errorf("after a restart: %+v; want CPU at least the first process's %v, its peak %d kept, the new RSS", got, seen.CPU, seen.PeakRSS)
	}
}

func TestReadProcStatOfNoProcess(t *testing.T) {
	if _, err := ReadProcStat(1 << 30); err == nil {
		t.Error("read a process that does not exist")
	}
}
