/**
 * docs/clients.md's "Errors in each client" table, read as the expectation: one row per snippet
 * name, one cell per status, each cell the class the client raises (`Class`, or
 * `Class` wrapping `Inner` for clients that wrap the OpenAI SDK's error).
 */
export interface ErrorCell {
  readonly class: string;
  readonly wraps?: string;
}

export const TABLE_STATUSES = ['400', '401', '403', '429'] as const;
export type TableStatus = (typeof TABLE_STATUSES)[number];

/** Rows of the table under `heading` (`## …`): snippet name → status → expected class. */
export function readErrorTable(markdown: string, heading: string): Map<string, Record<TableStatus, ErrorCell>> {
  const start = markdown.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`no ${heading} section`);
  const rows = new Map<string, Record<TableStatus, ErrorCell>>();
  const lines = markdown.slice(start).split('\n').slice(2);
  for (const line of lines.slice(lines.findIndex((l) => l.startsWith('|')))) {
    if (!line.startsWith('|')) break;
    const cells = line
      .split('|')
      .slice(1, -1)
      .map((c) => c.trim());
    const names = [...cells[0]!.matchAll(/`([a-z0-9-]+)`/g)].map((m) => m[1]!);
    if (names.length === 0 || cells.length !== 1 + TABLE_STATUSES.length) continue; // header, rule
    const row = Object.fromEntries(TABLE_STATUSES.map((s, i) => [s, cell(cells[i + 1]!)])) as Record<TableStatus, ErrorCell>;
    for (const name of names) rows.set(name, row);
  }
  return rows;
}

function cell(text: string): ErrorCell {
  const [cls, inner] = [...text.matchAll(/`([A-Za-z]+)`/g)].map((m) => m[1]!);
  if (!cls) throw new Error(`error table cell without a class: ${text}`);
  return inner ? { class: cls, wraps: inner } : { class: cls };
}
