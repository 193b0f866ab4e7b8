package health

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// programs compiles CEL expressions once each: the same rules are evaluated on every status sync of
// every work that carries them. Its CEL environments are built when the first expression is compiled:
// most clusters' works have no conditionRules and no Jobs or Pods, and the environments (the API
// server's CEL libraries) are a quarter of a megabyte of heap the agent would otherwise hold for
// nothing.
type programs struct {
	envOnce sync.Once
	env     *cel.Env // object
	msgEnv  *cel.Env // object, result
	envErr  error

	mu    sync.Mutex
	cache map[programKey]compiled
}

type programKey struct {
	expression string
	message    bool
}

type compiled struct {
	program cel.Program
	err     error
}

// maxCachedPrograms bounds the cache; past it, the cache starts afresh (rules are few in practice,
// and a flood of distinct expressions must not grow the agent without bound).
const maxCachedPrograms = 1024

func newPrograms() *programs {
	return &programs{cache: map[programKey]compiled{}}
}

// buildEnvs builds the environments expressions are compiled in: with object, and with object and
// result (for messageExpressions).
func buildEnvs() (env, msgEnv *cel.Env, err error) {
	// The API server's CEL environment (the libraries CRD validation rules and admission policies
	// have: lists, regex, URLs, quantities, ...), so a rule written for one works in the other.
	base := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
	hasConditions := cel.Function("hasConditions", cel.Overload("status_has_conditions",
		[]*cel.Type{cel.DynType}, cel.BoolType, cel.UnaryBinding(hasConditions)))
	objectSet, err := base.Extend(environment.VersionedOptions{
		IntroducedVersion: environment.DefaultCompatibilityVersion(),
		EnvOptions:        []cel.EnvOption{cel.Variable("object", cel.DynType), hasConditions},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("CEL environment: %w", err)
	}
	resultSet, err := objectSet.Extend(environment.VersionedOptions{
		IntroducedVersion: environment.DefaultCompatibilityVersion(),
		EnvOptions:        []cel.EnvOption{cel.Variable("result", cel.BoolType)},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("CEL environment: %w", err)
	}
	if env, err = objectSet.Env(environment.StoredExpressions); err != nil {
		return nil, nil, fmt.Errorf("CEL environment: %w", err)
	}
	if msgEnv, err = resultSet.Env(environment.StoredExpressions); err != nil {
		return nil, nil, fmt.Errorf("CEL environment: %w", err)
	}
	return env, msgEnv, nil
}

// compile returns the program of expression, compiled in the message environment (with result) or
// not, and the compile error a person reads: the first line of CEL's report, without its code
// snippet.
func (p *programs) compile(expression string, message bool) (cel.Program, error) {
	p.envOnce.Do(func() { p.env, p.msgEnv, p.envErr = buildEnvs() })
	if p.envErr != nil {
		return nil, p.envErr
	}
	key := programKey{expression, message}
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.cache[key]; ok {
		return c.program, c.err
	}
	env := p.env
	if message {
		env = p.msgEnv
	}
	var c compiled
	ast, iss := env.Compile(expression)
	if iss.Err() != nil {
		c.err = fmt.Errorf("%s", strings.Split(iss.String(), "\n | ")[0])
	} else {
		// The API server's per-expression cost limit: a rule that could loop over a huge list is
		// stopped, not left to starve the agent.
		c.program, c.err = env.Program(ast, cel.CostLimit(celconfig.PerCallLimit), cel.InterruptCheckFrequency(100))
	}
	if len(p.cache) >= maxCachedPrograms {
		p.cache = map[programKey]compiled{}
	}
	p.cache[key] = c
	return c.program, c.err
}

// evalBool evaluates expression against object and wants a bool.
func (p *programs) evalBool(expression string, object map[string]any) (bool, error) {
	prg, err := p.compile(expression, false)
	if err != nil {
		return false, err
	}
	out, _, err := prg.Eval(map[string]any{"object": object})
	if err != nil {
		return false, err
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("the expression gives %v, want a bool", reflect.TypeOf(out.Value()))
	}
	return b, nil
}

// evalMessage evaluates a messageExpression and wants a string.
func (p *programs) evalMessage(expression string, object map[string]any, result bool) (string, error) {
	prg, err := p.compile(expression, true)
	if err != nil {
		return "", err
	}
	out, _, err := prg.Eval(map[string]any{"object": object, "result": result})
	if err != nil {
		return "", err
	}
	s, ok := out.Value().(string)
	if !ok {
		return "", fmt.Errorf("the message expression gives %v, want a string", reflect.TypeOf(out.Value()))
	}
	return s, nil
}

// hasConditions says whether a status value holds a non-empty list of conditions; OCM's rules for
// Jobs use it, and users' rules may too.
func hasConditions(status ref.Val) ref.Val {
	m, ok := status.(traits.Mapper)
	if !ok {
		return types.False
	}
	conditions, found := m.Find(types.String("conditions"))
	if !found {
		return types.False
	}
	l, ok := conditions.(traits.Lister)
	return types.Bool(ok && l.Size() != types.IntZero)
}
