package locks

// The shared scenario format of spec-tests/ (spec-tests/README.md,
// spec-tests/schema.json), loaded strictly: an unknown step, an unknown or
// missing field, or a value outside its field's domain fails the scenario
// when it loads, never silently skips.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// scenarioDir is the shared scenarios' folder, read in place at test time.
const scenarioDir = "../../spec-tests/scenarios"

type scenario struct {
	ID        string    `json:"id"`
	Contracts []string  `json:"contracts"`
	Title     string    `json:"title"`
	Store     storeSpec `json:"store"`
	Steps     []step
}

type storeSpec struct {
	Renewal *bool `json:"renewal"`
	Push    *bool `json:"push"`
}

// step is one step, every field any step may have; `fields` says which it had.
type step struct {
	Step        string  `json:"step"`
	Lock        string  `json:"lock"`
	Name        *string `json:"name"`
	TTL         *string `json:"ttl"`
	MaxHold     *string `json:"max_hold"`
	Wait        *string `json:"wait"`
	Margin      *string `json:"margin"`
	Holder      string  `json:"holder"`
	Key         string  `json:"key"`
	By          *string `json:"by"`
	Message     *string `json:"message"`
	Expect      *string `json:"expect"`
	ExpectError *string `json:"expect_error"`
	ExpectCause *string `json:"expect_cause"`
	Error       string  `json:"error"`
	Reason      string  `json:"reason"`
	Remaining   string  `json:"remaining"`
	Than        string  `json:"than"`
	Tasks       *int    `json:"tasks"`

	raw string
}

// stepFields: each step's required and optional fields (besides "step").
var stepFields = map[string][2][]string{
	"open_lock":            {{"lock"}, {"name", "ttl", "max_hold", "wait", "margin", "expect", "expect_error"}},
	"hold":                 {{"holder", "lock", "key"}, {"wait", "expect", "expect_error"}},
	"try_hold":             {{"holder", "lock", "key"}, {"expect", "expect_error"}},
	"end":                  {{"holder"}, {"by", "message", "expect", "expect_error", "expect_cause"}},
	"cancel":               {{"holder"}, nil},
	"expect_granted":       {{"holder"}, nil},
	"expect_waiting":       {{"holder"}, nil},
	"expect_failed":        {{"holder", "error"}, nil},
	"expect_lost":          {{"holder", "reason"}, nil},
	"expect_not_lost":      {{"holder"}, nil},
	"expect_remaining":     {{"holder", "remaining"}, nil},
	"expect_fence_greater": {{"holder", "than"}, nil},
	"advance":              {{"by"}, nil},
	"try_acquire":          {{"holder", "name", "ttl"}, {"expect", "expect_error"}},
	"acquire":              {{"holder", "name", "ttl"}, {"wait", "expect", "expect_error"}},
	"extend":               {{"holder", "by"}, {"tasks", "expect", "expect_error"}},
	"release":              {{"holder"}, {"tasks", "expect", "expect_error"}},
	"close":                {nil, nil},
	"reopen":               {nil, nil},
}

// expectDomain: the values `expect` may take, per step.
var expectDomain = map[string][]string{
	"open_lock": {"ok"}, "extend": {"ok"}, "release": {"ok"},
	"hold": {"granted", "waiting"}, "acquire": {"granted", "waiting"},
	"try_hold": {"granted", "not_held"}, "try_acquire": {"granted", "not_held"},
	"end": {"ok", "function_error", "panic", "cancelled"},
}

// mustExpect: the steps that need `expect` or `expect_error`.
var mustExpect = []string{"hold", "acquire", "try_hold", "try_acquire"}

var knownCodes = []Code{
	CodeLost, CodeInvalidTTL, CodeEmptyName, CodePermissionDenied, CodeUnauthenticated,
	CodeWaitTimeout, CodeCancelled, CodeUnavailable, CodeTimeout, CodeNamespaceMismatch,
	CodeProtocol, CodeInternal, CodeInvalidArgument, CodeClosed, CodeNotReady, CodeOverflow,
}

var knownReasons = []LossReason{Expired, Revoked, Unknown, Restarted, Closed}

func strictDecode(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return fmt.Errorf("data after the JSON value")
	}
	return nil
}

// parseStep reads one step, refusing what the format does not allow.
func parseStep(raw json.RawMessage) (step, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return step{}, err
	}
	var s step
	if err := strictDecode(raw, &s); err != nil {
		return s, err
	}
	s.raw = string(raw)
	spec, ok := stepFields[s.Step]
	if !ok {
		return s, fmt.Errorf("unknown step %q", s.Step)
	}
	for f := range fields {
		if f != "step" && !slices.Contains(spec[0], f) && !slices.Contains(spec[1], f) {
			return s, fmt.Errorf("step %s has no field %q", s.Step, f)
		}
	}
	for _, f := range spec[0] {
		if _, ok := fields[f]; !ok {
			return s, fmt.Errorf("step %s needs the field %q", s.Step, f)
		}
	}
	if s.Expect != nil && !slices.Contains(expectDomain[s.Step], *s.Expect) {
		return s, fmt.Errorf("step %s: unknown expectation %q", s.Step, *s.Expect)
	}
	if s.Expect != nil && s.ExpectError != nil {
		return s, fmt.Errorf("step %s: give expect or expect_error, not both", s.Step)
	}
	if slices.Contains(mustExpect, s.Step) && s.Expect == nil && s.ExpectError == nil {
		return s, fmt.Errorf("step %s needs expect or expect_error", s.Step)
	}
	for _, c := range []*string{s.ExpectError, &s.Error} {
		if c != nil && *c != "" && !slices.Contains(knownCodes, Code(*c)) {
			return s, fmt.Errorf("step %s: unknown error code %q", s.Step, *c)
		}
	}
	if _, ok := fields["error"]; ok && s.Error == "" {
		return s, fmt.Errorf("step %s: unknown error code %q", s.Step, s.Error)
	}
	if _, ok := fields["reason"]; ok && !slices.Contains(knownReasons, LossReason(s.Reason)) {
		return s, fmt.Errorf("step %s: unknown loss reason %q", s.Step, s.Reason)
	}
	if s.Step == "end" {
		by := "return"
		if s.By != nil {
			by = *s.By
		}
		if !slices.Contains([]string{"return", "error", "panic", "cancel"}, by) {
			return s, fmt.Errorf("end: unknown way to end %q", by)
		}
		if s.ExpectCause != nil && s.ExpectError == nil {
			return s, fmt.Errorf("end: expect_cause goes with expect_error")
		}
		if s.Message != nil && by != "error" && by != "panic" {
			return s, fmt.Errorf("end: message goes with by: error or panic")
		}
	}
	if s.Tasks != nil && *s.Tasks < 1 {
		return s, fmt.Errorf("step %s: tasks must be at least 1", s.Step)
	}
	return s, nil
}

// loadScenario reads and checks one scenario file.
func loadScenario(path string) (*scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var top struct {
		ID        string            `json:"id"`
		Contracts []string          `json:"contracts"`
		Title     string            `json:"title"`
		Store     json.RawMessage   `json:"store"`
		Steps     []json.RawMessage `json:"steps"`
	}
	if err := strictDecode(data, &top); err != nil {
		return nil, err
	}
	sc := &scenario{ID: top.ID, Contracts: top.Contracts, Title: top.Title}
	if err := strictDecode(top.Store, &sc.Store); err != nil || sc.Store.Renewal == nil || sc.Store.Push == nil {
		return nil, fmt.Errorf("store needs exactly renewal and push (%v)", err)
	}
	if want := strings.TrimSuffix(filepath.Base(path), ".json"); sc.ID != want {
		return nil, fmt.Errorf("the id %q is not the file's name %q", sc.ID, want)
	}
	if len(sc.Contracts) == 0 || top.Title == "" || len(top.Steps) == 0 {
		return nil, fmt.Errorf("a scenario needs contracts, a title and steps")
	}
	for i, raw := range top.Steps {
		s, err := parseStep(raw)
		if err != nil {
			return nil, fmt.Errorf("step %d: %w", i, err)
		}
		sc.Steps = append(sc.Steps, s)
	}
	return sc, nil
}

// scenarioFiles lists the shared scenario files, sorted.
func scenarioFiles() ([]string, error) {
	files, err := filepath.Glob(filepath.Join(scenarioDir, "*.json"))
	sort.Strings(files)
	return files, err
}

// appliesToServer: as spec-tests' runner says, a scenario runs on the server
// store when it needs pushed grants and moves no virtual clock.
func appliesToServer(sc *scenario) bool {
	if !*sc.Store.Push {
		return false
	}
	for _, s := range sc.Steps {
		switch s.Step {
		case "advance", "close", "reopen", "expect_remaining":
			return false
		}
	}
	return true
}
