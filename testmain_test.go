package cleolease_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/cleocode/cleolease/internal/proctest"
)

// Multi-process tests re-execute the test binary with CLEOLEASE_ROLE set;
// TestMain then runs that role (registered in roles by the test files'
// init functions) instead of the tests. Children report on stdout lines and
// take orders from stdin lines; CLEOLEASE_DSN carries the DSN.
var roles = map[string]func() int{}

func TestMain(m *testing.M) {
	if role := os.Getenv("CLEOLEASE_ROLE"); role != "" {
		f, ok := roles[role]
		if !ok {
			fmt.Println("ERR unknown role", role)
			os.Exit(2)
		}
		os.Exit(f())
	}
	os.Exit(m.Run())
}

// child is a re-executed test binary playing a role.
type child struct{ *proctest.Child }

// startChild runs role in a new process with CLEOLEASE_DSN=dsn and the
// extra environment; the child is killed at the end of the test.
func startChild(t testing.TB, role, dsn string, env ...string) *child {
	t.Helper()
	return &child{proctest.Start(t, append([]string{"CLEOLEASE_ROLE=" + role, "CLEOLEASE_DSN=" + dsn}, env...)...)}
}

// expect reads the child's next line, checks its prefix and returns the rest.
func (c *child) expect(prefix string) string {
	c.T.Helper()
	return c.Expect(prefix)
}

// send writes one line to the child's stdin.
func (c *child) send(line string) {
	c.T.Helper()
	c.Send(line)
}

// eventually polls cond every 2ms until it holds, failing after 20s.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	proctest.Eventually(t, what, cond)
}
