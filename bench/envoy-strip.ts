/**
 * Tuning runs only (bench/main.ts --envoy-strip): the rendered Envoy config with parts of the
 * filter chain removed, to measure what each costs per request. Never a configuration to ship:
 * the access log is the operators' record and the Lua filter enforces the header limits and the
 * request-id rule.
 */
import { readFileSync, writeFileSync } from 'node:fs';

/** What a tuning run may strip, and the first line of the YAML block each one is. */
const BLOCKS = {
  'access-log': /^\s*access_log:\s*$/,
  lua: /^\s*- name: envoy\.filters\.http\.lua\s*$/,
  'header-mutation': /^\s*- name: envoy\.filters\.http\.header_mutation\s*$/,
  // The new-key budget (envoy/new-keys.ts): one line each in the rendered config.
  'known-keys': /^\s*- \{"name":"known_keys"/,
  'new-keys': /^\s*- \{"name":"new_keys"/,
  buffer: /^\s*- name: envoy\.filters\.http\.buffer\s*$/,
} as const;

/** The names --envoy-strip accepts. */
export type Strippable = keyof typeof BLOCKS;

const indentOf = (line: string): number => line.length - line.trimStart().length;

/** Removes one block: its first line and every following line indented deeper (or blank). */
function removeBlock(lines: string[], start: RegExp): string[] {
  const at = lines.findIndex((l) => start.test(l));
  if (at < 0) throw new Error(`envoy-strip: no line matches ${start}`);
  const indent = indentOf(lines[at] as string);
  // A list item's children are indented past its dash; a mapping key's past the key.
  const childIndent = (lines[at] as string).trimStart().startsWith('- ') ? indent + 2 : indent + 1;
  let end = at + 1;
  while (end < lines.length && ((lines[end] as string).trim() === '' || indentOf(lines[end] as string) >= childIndent)) end++;
  return [...lines.slice(0, at), ...lines.slice(end)];
}

/** Rewrites `file` without the named blocks. */
export function stripEnvoyConfig(file: string, names: readonly string[]): void {
  let lines = readFileSync(file, 'utf8').split('\n');
  for (const name of names) {
    if (!(name in BLOCKS)) throw new Error(`envoy-strip: unknown part ${name} (known: ${Object.keys(BLOCKS).join(', ')})`);
    lines = removeBlock(lines, BLOCKS[name as Strippable]);
  }
  writeFileSync(file, lines.join('\n'));
}
