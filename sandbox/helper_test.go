//go:build linux

package sandbox_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// helperEnv makes the test binary a program that tries one thing and
// says how it went: "read:PATH", "write:PATH", "dial:ADDR", "fetch:URL",
// "alloc:MB", "files:N", "procs:N", "child:ACTION" (runs itself with
// ACTION), "status" (its /proc/self/status), "kill:PID" (signal 0).
const helperEnv = "SANDBOX_TEST_HELPER"

// helperMain runs the helper and exits when the environment asks for it.
func helperMain() {
	if action := os.Getenv(helperEnv); action != "" {
		os.Exit(helper(action))
	}
}

func helper(action string) int {
	kind, arg, _ := strings.Cut(action, ":")
	out, err := try(kind, arg)
	fmt.Print(out)
	if err != nil {
		fmt.Printf("error: %v\n", err)
		return 1
	}
	return 0
}

func try(kind, arg string) (string, error) {
	switch kind {
	case "read":
		b, err := os.ReadFile(arg)
		return string(b), err
	case "write":
		return "", os.WriteFile(arg, []byte("written"), 0o644)
	case "unix":
		c, err := net.DialTimeout("unix", arg, 2*time.Second)
		if err == nil {
			c.Close()
		}
		return "", err
	case "socketpair":
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		if err == nil {
			syscall.Close(fds[0])
			syscall.Close(fds[1])
		}
		return "", err
	case "dial":
		c, err := net.DialTimeout("tcp", arg, 2*time.Second)
		if err == nil {
			c.Close()
		}
		return "", err
	case "fetch":
		proxy, err := url.Parse(os.Getenv("HTTP_PROXY"))
		if err != nil || proxy.Host == "" {
			return "", fmt.Errorf("no HTTP_PROXY (%q)", os.Getenv("HTTP_PROXY"))
		}
		// Always through the proxy: ProxyFromEnvironment skips localhost.
		c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy)}, Timeout: 5 * time.Second}
		resp, err := c.Get(arg)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return string(b), fmt.Errorf("status %d", resp.StatusCode)
		}
		return string(b), nil
	case "alloc":
		var mb int
		fmt.Sscan(arg, &mb)
		var keep [][]byte
		for range mb {
			b := make([]byte, 1<<20)
			for i := range b {
				b[i] = 1
			}
			keep = append(keep, b)
		}
		return fmt.Sprintf("allocated %d MiB\n", len(keep)), nil
	case "files":
		var n int
		fmt.Sscan(arg, &n)
		for i := range n {
			if _, err := os.Open("/dev/null"); err != nil {
				return fmt.Sprintf("opened %d\n", i), err
			}
		}
		return fmt.Sprintf("opened %d\n", n), nil
	case "procs":
		var n int
		fmt.Sscan(arg, &n)
		var cmds []*exec.Cmd
		defer func() {
			for _, c := range cmds {
				c.Process.Kill()
				c.Wait()
			}
		}()
		for i := range n {
			c := exec.Command("/bin/sleep", "30")
			if err := c.Start(); err != nil {
				return fmt.Sprintf("started %d\n", i), err
			}
			cmds = append(cmds, c)
		}
		return fmt.Sprintf("started %d\n", n), nil
	case "child":
		exe, _ := os.Executable()
		c := exec.Command(exe)
		c.Env = append(os.Environ(), helperEnv+"="+arg)
		out, err := c.CombinedOutput()
		return string(out), err
	case "status":
		b, err := os.ReadFile("/proc/self/status")
		return string(b), err
	case "kill":
		var pid int
		fmt.Sscan(arg, &pid)
		return "", syscall.Kill(pid, 0)
	case "env":
		return strings.Join(os.Environ(), "\n") + "\n", nil
	default:
		if f, ok := attacks[kind]; ok {
			return f(arg)
		}
	}
	return "", fmt.Errorf("unknown helper action %q", kind)
}
