//go:build linux

package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// A control group of its own bounds what rlimits cannot: a memory
// cgroup counts shared anonymous memory and memfd (RLIMIT_DATA does not),
// and a pids cgroup counts the processes of root too (RLIMIT_NPROC does
// not). mcpfsm makes one, below its own cgroup, where it may: with
// cgroup v1 (a memory or pids hierarchy whose mcpfsm directory it can
// write, as root), or with cgroup v2 where its cgroup already hands the
// controller to children (cgroup.subtree_control names it). It never
// moves itself or changes its own cgroup.

// cgroupSeq names the cgroups of one mcpfsm process apart.
var cgroupSeq atomic.Int64

// cgroup is the control group of one sandboxed program, one directory a
// hierarchy (memory, pids); the program and all it starts are in it.
type cgroup struct {
	dirs   []string
	memory string // the memory controller's directory, "" without
	v2     bool   // the memory directory is cgroup v2's
}

// newCgroup makes the cgroup that bounds memory to mb MiB and the
// processes to procs (0: no bound), or returns why it cannot.
func newCgroup(mb, procs int) (*cgroup, error) {
	name := fmt.Sprintf("mcpfsm-sandbox-%d-%d", os.Getpid(), cgroupSeq.Add(1))
	cg := &cgroup{}
	for _, c := range []struct {
		controller string
		n          int
		files      func(v2 bool) [][2]string
	}{
		{"memory", mb, func(v2 bool) [][2]string {
			b := strconv.FormatInt(int64(mb)<<20, 10)
			if v2 {
				return [][2]string{{"memory.max", b}, {"memory.swap.max", "0"}}
			}
			// memsw (memory and swap) only where swap is accounted.
			return [][2]string{{"memory.limit_in_bytes", b}, {"memory.memsw.limit_in_bytes", b}}
		}},
		{"pids", procs, func(bool) [][2]string { return [][2]string{{"pids.max", strconv.Itoa(procs)}} }},
	} {
		if c.n <= 0 {
			continue
		}
		parent, v2, err := cgroupParent(c.controller)
		if err != nil {
			cg.remove()
			return nil, err
		}
		dir := filepath.Join(parent, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			cg.remove()
			return nil, fmt.Errorf("a %s cgroup: %w", c.controller, err)
		}
		cg.dirs = append(cg.dirs, dir)
		if c.controller == "memory" {
			cg.memory, cg.v2 = dir, v2
		}
		for i, f := range c.files(v2) {
			err := os.WriteFile(filepath.Join(dir, f[0]), []byte(f[1]), 0)
			if err != nil && (i == 0 || !errors.Is(err, os.ErrNotExist)) {
				cg.remove()
				return nil, fmt.Errorf("a %s cgroup: %w", c.controller, err)
			}
		}
	}
	return cg, nil
}

// join moves the process pid (and so all it starts) into the cgroup.
func (cg *cgroup) join(pid int) error {
	for _, d := range cg.dirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("joining %s: %w", d, err)
		}
	}
	return nil
}

// oomKilled reports whether the kernel killed a process of the cgroup
// for its memory limit.
func (cg *cgroup) oomKilled() bool {
	if cg == nil || cg.memory == "" {
		return false
	}
	file := "memory.oom_control"
	if cg.v2 {
		file = "memory.events"
	}
	b, err := os.ReadFile(filepath.Join(cg.memory, file))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if n, ok := strings.CutPrefix(line, "oom_kill "); ok {
			return n != "0"
		}
	}
	return false
}

// remove removes the cgroup, which must hold no process any more.
func (cg *cgroup) remove() error {
	if cg == nil {
		return nil
	}
	var errs []error
	for _, d := range cg.dirs {
		if err := unix.Rmdir(d); err != nil && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("removing %s: %w", d, err))
		}
	}
	cg.dirs = nil
	return errors.Join(errs...)
}

var (
	cgroupOnce sync.Once
	cgroupErr  map[string]error
)

// cgroupAvailable reports why a cgroup with controller cannot be made
// for a sandboxed program, or nil; it asks the system once.
func cgroupAvailable(controller string) error {
	cgroupOnce.Do(func() {
		cgroupErr = map[string]error{}
		for _, c := range []string{"memory", "pids"} {
			_, _, cgroupErr[c] = cgroupParent(c)
		}
	})
	return cgroupErr[controller]
}

// cgroupParent returns the directory of mcpfsm's own cgroup in the
// hierarchy of controller, where a child cgroup can be made, and whether
// it is cgroup v2's.
func cgroupParent(controller string) (string, bool, error) {
	own, err := ownCgroups()
	if err != nil {
		return "", false, err
	}
	mounts, err := cgroupMounts()
	if err != nil {
		return "", false, err
	}
	for _, m := range mounts {
		if m.v2 || !slices.Contains(m.controllers, controller) {
			continue
		}
		for _, o := range own {
			if slices.Contains(o.controllers, controller) {
				dir := filepath.Join(m.point, strings.TrimPrefix(o.path, m.root))
				return dir, false, writable(dir, controller)
			}
		}
	}
	for _, m := range mounts {
		if !m.v2 {
			continue
		}
		for _, o := range own {
			if o.hierarchy != "0" {
				continue
			}
			dir := filepath.Join(m.point, strings.TrimPrefix(o.path, m.root))
			b, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
			if err != nil || !slices.Contains(strings.Fields(string(b)), controller) {
				return "", true, fmt.Errorf("mcpfsm's cgroup %s does not hand the %s controller to children (cgroup.subtree_control)", dir, controller)
			}
			return dir, true, writable(dir, controller)
		}
	}
	return "", false, fmt.Errorf("no cgroup hierarchy has the %s controller", controller)
}

func writable(dir, controller string) error {
	if err := unix.Access(dir, unix.W_OK); err != nil {
		return fmt.Errorf("mcpfsm cannot make a %s cgroup in %s: %w", controller, dir, err)
	}
	return nil
}

// ownCgroup is a line of /proc/self/cgroup.
type ownCgroup struct {
	hierarchy   string
	controllers []string
	path        string
}

func ownCgroups() ([]ownCgroup, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	var out []ownCgroup
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 {
			out = append(out, ownCgroup{hierarchy: parts[0], controllers: strings.Split(parts[1], ","), path: parts[2]})
		}
	}
	return out, nil
}

// cgroupMount is a mounted cgroup hierarchy.
type cgroupMount struct {
	point, root string
	v2          bool
	controllers []string // v1's, from its mount options
}

func cgroupMounts() ([]cgroupMount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []cgroupMount
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for s.Scan() {
		// ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPEROPTIONS
		before, after, ok := strings.Cut(s.Text(), " - ")
		if !ok {
			continue
		}
		f, a := strings.Fields(before), strings.Fields(after)
		if len(f) < 5 || len(a) < 3 {
			continue
		}
		switch a[0] {
		case "cgroup2":
			out = append(out, cgroupMount{point: f[4], root: f[3], v2: true})
		case "cgroup":
			out = append(out, cgroupMount{point: f[4], root: f[3], controllers: strings.Split(a[2], ",")})
		}
	}
	return out, s.Err()
}

// memoryBound says what memoryMB bounds on this system, for
// [Spec.Describe].
func memoryBound() string {
	if err := cgroupAvailable("memory"); err != nil {
		return "private memory only: shared memory and memfd are not bounded, as " + err.Error()
	}
	return "a memory cgroup: shared memory and memfd count"
}
