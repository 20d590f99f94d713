/** Assertions shared by every suite that receives problem bodies over the wire. */
import { expect } from 'vitest';
import { problem, type ProblemCode } from '../../openapi/problems.js';

/**
 * Asserts `body` is exactly the catalogue's problem for `code` with some `detail`: status,
 * title, and the OpenAI `error` mirror all follow from the code and that detail.
 */
export function expectProblemBody(body: unknown, code: ProblemCode): void {
  const detail = (body as { detail?: unknown }).detail;
  expect(typeof detail).toBe('string');
  expect(body).toEqual(problem(code, detail as string));
}
