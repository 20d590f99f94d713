/**
 * Token accounting and the truncation policy: pure functions of token ids. Messages follow vLLM's
 * wording and carry counts only, never input text.
 */

/** What the request asked for through `truncate_prompt_tokens`, already checked. */
export type TruncationPolicy = { readonly kind: 'reject' } | { readonly kind: 'keep'; readonly tokens: number };

/** The outcome of reading `truncate_prompt_tokens`: a policy, or the invalid_body it is. */
export type TruncationChoice =
  | { readonly ok: true; readonly policy: TruncationPolicy }
  | { readonly ok: false; readonly code: 'invalid_body'; readonly detail: string };

/**
 * Maps `truncate_prompt_tokens` to a policy, the rule the OpenAPI schema states: absent →
 * reject over-long inputs; -1 → keep `maxTokens`; 2..maxTokens → keep k; anything else is
 * invalid_body. The schema already refuses those values; this check keeps the rule whole
 * for a model whose context is shorter than the schema's 512.
 */
export function truncationPolicy(value: number | undefined, maxTokens: number): TruncationChoice {
  if (value === undefined) return { ok: true, policy: { kind: 'reject' } };
  if (value === -1) return { ok: true, policy: { kind: 'keep', tokens: maxTokens } };
  if (Number.isInteger(value) && value >= 2 && value <= maxTokens) return { ok: true, policy: { kind: 'keep', tokens: value } };
  return { ok: false, code: 'invalid_body', detail: `truncate_prompt_tokens: must be -1 or from 2 to ${maxTokens}` };
}

/** vLLM's message for an input over the context length. */
export function contextLengthMessage(requested: number, maxTokens: number): string {
  return (
    `This model's maximum context length is ${maxTokens} tokens. However, you requested ${requested} tokens ` +
    'in the input for embedding generation. Please reduce the length of the input.'
  );
}

/**
 * Cuts `ids` to its first `keep` tokens while keeping the closing special tokens, so the model
 * sees a well-formed sequence ([CLS] first tokens … [SEP]).
 */
export function truncateIds(ids: readonly number[], keep: number, closing: number): number[] {
  if (ids.length <= keep) return ids.slice();
  const tail = closing > 0 ? ids.slice(ids.length - closing) : [];
  return ids.slice(0, Math.max(0, keep - tail.length)).concat(tail);
}

/**
 * One input's ids after the policy (with `cutFrom`, its token count before a truncation cut it),
 * or the count that made it too long.
 */
export type AdmittedInput =
  | { readonly ok: true; readonly ids: number[]; readonly cutFrom?: number }
  | { readonly ok: false; readonly requested: number };

/** Applies the policy to one encoded input. */
export function admitInput(ids: number[], policy: TruncationPolicy, maxTokens: number, closing: number): AdmittedInput {
  if (policy.kind === 'keep') {
    return ids.length > policy.tokens
      ? { ok: true, ids: truncateIds(ids, policy.tokens, closing), cutFrom: ids.length }
      : { ok: true, ids };
  }
  return ids.length > maxTokens ? { ok: false, requested: ids.length } : { ok: true, ids };
}

/** The text the model sees: the role's instruction, then the input. */
export function instructed(
  text: string,
  inputType: 'query' | 'document' | undefined,
  instructions: {
    readonly queryInstruction: string;
    readonly documentInstruction: string;
  },
): string {
  // `document` and no input_type must give the same vector, so both take the document prefix.
  return (inputType === 'query' ? instructions.queryInstruction : instructions.documentInstruction) + text;
}
