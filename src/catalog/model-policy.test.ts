import { describe, expect, it } from 'vitest';
import { modelPatternProblem, modelPolicyProblem } from './model-policy.js';
import { modelPolicyAllows } from './models.js';

describe('a model policy pattern', () => {
  it.each(['*', 'vendor_a/*', 'vendor_b/*', 'vendor_b/gpt-4o-mini', 'vendor_a/claude-sonnet-4-5'])(
    'is stored when it can match a model: %s',
    (pattern) => expect(modelPatternProblem(pattern)).toBeUndefined(),
  );

  it.each([
    ['gpt-4o', /names no provider/],
    ['vendor_c/*', /names no registered provider/],
    ['vendor_c/gpt-4o', /names no registered provider/],
    ['VENDOR_A/*', /names no registered provider/],
    ['vendor_b/', /is not a pattern/],
    ['vendor_b/gpt-*', /is not a pattern/],
    ['vendor_b/*/x', /is not a pattern/],
    ['vendor_b/gpt 4o', /is not a pattern/],
    ['', /names no provider/],
    ['**', /names no provider/],
  ])('is refused when it can never match: %s', (pattern, message) => {
    expect(modelPatternProblem(pattern)).toMatch(message);
    // What the refusal stands for: the request path would never allow a model with it.
    for (const model of ['vendor_a/claude-sonnet-4-5', 'vendor_b/gpt-4o', 'vendor_b/gpt-4o-x'])
      expect(modelPolicyAllows([pattern], model)).toBe(false);
  });

  it("of a credential names the credential's own provider", () => {
    expect(modelPolicyProblem(['vendor_b/*', 'vendor_b/gpt-4o'], 'vendor_b')).toBeUndefined();
    expect(modelPolicyProblem(['*'], 'vendor_a')).toBeUndefined();
    expect(modelPolicyProblem(['vendor_a/*'], 'vendor_b')).toMatch(
      /"vendor_a\/\*" names another provider than the credential's: patterns start with vendor_b\//,
    );
  });

  it('is one of 1 to 100', () => {
    expect(modelPolicyProblem([])).toBe('must allow at least one model');
    expect(modelPolicyProblem(Array.from({ length: 101 }, () => '*'))).toMatch(/at most 100/);
    expect(modelPolicyProblem(['vendor_a/*', 'gpt-4o'])).toMatch(/"gpt-4o" names no provider/);
  });
});
