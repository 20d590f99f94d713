/**
 * The console page: static HTML, ES modules and CSS from admin/src/console/, read once at
 * start-up (no build step), served with a strict Content-Security-Policy. The page holds no
 * data; everything it shows comes from the authenticated API.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';

const CONSOLE_DIR = fileURLToPath(new URL('../console/', import.meta.url));
const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/** Headers every console response carries. */
const PAGE_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-cache',
};

/** Serves `/` (index.html) and `/console/<file>` for each file in the console folder. */
export function registerConsole(app: FastifyInstance): void {
  const files = new Map<string, { type: string; body: Buffer }>();
  for (const name of readdirSync(CONSOLE_DIR)) {
    const type = TYPES[extname(name)];
    if (type) files.set(name, { type, body: readFileSync(join(CONSOLE_DIR, name)) });
  }
  const index = files.get('index.html');
  if (!index) throw new Error(`${CONSOLE_DIR}index.html is missing`);
  app.get('/', async (_request, reply) => reply.headers(PAGE_HEADERS).type(index.type).send(index.body));
  for (const [name, file] of files) {
    app.get(`/console/${name}`, async (_request, reply) => reply.headers(PAGE_HEADERS).type(file.type).send(file.body));
  }
}
