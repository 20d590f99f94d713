/**
 * The management console in a real headless Chromium (Debian's /usr/bin/chromium driven by
 * playwright-core) against the real stack (Envoy, authz, the embedder on the generated test
 * model) and the admin server started by `make console` on the same Redis prefix: sign in with
 * the bootstrap owner's token, create an organization and a key, embed with it through the
 * gateway, grow the organization to 50 keys with usage, and read it as a hospital team would:
 * top keys by name plus "others", search, paging, hide revoked, last use, a custom range, UTC
 * everywhere; a budget with a banner and its hard stop felt at the gateway; revoke (401),
 * disable (403) and delete; the audit trail filtered, paged, exported and verified; the pages at
 * 390 px wide. Controls are found by their accessible names and labels, so the test also fails
 * when the page loses them. Screenshots go to the stack's temp directory, or to docs/ with
 * CONSOLE_SCREENSHOT_DIR=docs (how docs/console-*.png are refreshed).
 */
import { join } from 'node:path';
import axe from 'axe-core';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStore, type RedisStore } from '../../authz/src/store/redis.js';
import { waitFor } from '../support/process.js';
import { redisUrl, repoRoot, startStack, type Stack } from '../support/stack.js';
import { startAdminServer, targetOf, type AdminServer } from './admin-server.js';
import { recordUsage } from '../support/settlement.js';

// A string no record may contain: it is the embedded text.
const CANARY = 'CANARY-7f3a-patient-reports-chest-pain';
const shot = (name: string) =>
  join(process.env.CONSOLE_SCREENSHOT_DIR ? join(repoRoot, process.env.CONSOLE_SCREENSHOT_DIR) : stack.dirs.dir, `console-${name}.png`);

let stack: Stack;
let admin: AdminServer;
let browser: Browser;
let page: Page;
let usage: RedisStore;
// Script errors and CSP violations the page reports (a refused API call's "Failed to load
// resource" line is expected: the page asks for its session before signing in).
const pageErrors: string[] = [];

beforeAll(async () => {
  stack = await startStack(join(repoRoot, '.local/models/test'));
  admin = await startAdminServer(targetOf(stack));
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, baseURL: admin.url });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: admin.url });
  page = await context.newPage();
  usage = createStore({ url: redisUrl, prefix: stack.svc.redisKeyPrefix, timeoutMs: 2000 });
  await usage.ready();
  page.on('dialog', (dialog) => void dialog.accept());
  page.on('pageerror', (error) => void pageErrors.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) pageErrors.push(message.text());
  });
});

afterAll(async () => {
  await usage?.close();
  await browser?.close();
  await admin?.stop();
  await stack?.stop();
});

const AXE = axe.source;

/** axe-core's violations on the page as it is (rule id and the first offending element), WCAG 2.1 A and AA. */
async function axeViolations(target: Page): Promise<string[]> {
  // Evaluated through the DevTools protocol: the page's Content-Security-Policy does not apply.
  await target.evaluate(AXE);
  return target.evaluate(async () => {
    const { violations } = await (
      window as unknown as {
        axe: { run: (o: object) => Promise<{ violations: Array<{ id: string; nodes: Array<{ target: string[] }> }> }> };
      }
    ).axe.run({
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] },
    });
    return violations.map((v) => `${v.id}: ${v.nodes[0]?.target.join(' ')} (${v.nodes.length})`);
  });
}

function embed(key: string) {
  return stack.request({
    method: 'POST',
    path: '/v1/embeddings',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: stack.svc.modelId, input: CANARY }),
  });
}

describe('management console (headless Chromium)', () => {
  const org = `clinic-${Date.now().toString(36)}`;
  let keyId = '';
  let fullKey = '';
  const workers: Array<{ id: string; key: string }> = [];

  it("signs in with the bootstrap owner's token by keyboard", async () => {
    await page.goto('/');
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(await page.getByRole('button', { name: 'Sign out' }).isVisible()).toBe(false);
    expect(await page.getByRole('navigation', { name: 'Sections' }).isVisible()).toBe(false);
    await page.screenshot({ path: shot('sign-in') });
    await page.getByLabel('Administrator token').fill(admin.token);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Organizations' }).waitFor();
    expect(await page.locator('#actor').textContent()).toBe('Signed in as admin:local-owner (owner)');
  });

  it('creates an organization', async () => {
    await page.getByLabel('Id', { exact: true }).fill(org);
    await page.getByLabel('Name', { exact: true }).fill('St. Elsewhere Radiology');
    await page.getByLabel('Requests per minute').fill('120');
    await page.getByRole('button', { name: 'Create organization' }).click();
    await page.getByRole('heading', { name: `Organization ${org} — St. Elsewhere Radiology` }).waitFor();
    expect(await page.getByLabel(`May use ${stack.svc.modelId}`).isChecked()).toBe(true);
  });

  it('creates a key shown once with a copy button, and it embeds through the gateway', async () => {
    await page.getByLabel('Key name').fill('pacs-indexer');
    await page.getByRole('button', { name: 'Create key' }).click();
    const shown = page.getByLabel('Full key');
    await shown.waitFor();
    fullKey = await shown.inputValue();
    expect(fullKey).toMatch(/^CTG_[A-Z]{12}_[A-Z]{38}$/);
    keyId = fullKey.split('_')[1]!;
    // The one-time key is focused for copying, and the copy button puts it on the clipboard.
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('new-key');
    await page.getByRole('button', { name: 'Copy key' }).click();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(fullKey);
    await page.locator('.once').screenshot({ path: shot('new-key') });
    const response = await embed(fullKey);
    expect(response.status, response.body).toBe(200);
    expect(response.json().data[0].embedding).toHaveLength(1024);
  });

  it('renames the key', async () => {
    const row = page.locator(`tr[data-key="${keyId}"]`);
    await row.getByText('Edit').click();
    await row.getByLabel(`Name of key ${keyId}`).fill('pacs-indexer-2');
    await row.getByRole('button', { name: 'Save key' }).click();
    await page.getByText(`Key ${keyId} saved.`).waitFor();
    expect(await page.locator(`tr[data-key="${keyId}"] td`).first().textContent()).toBe('pacs-indexer-2');
  });

  it('shows the first request in the chart within seconds', async () => {
    // Usage reaches Redis asynchronously; 20 s is generous on the shared 2-core machine.
    await waitFor(
      'the usage to show in the chart',
      async () => {
        await page.reload();
        await page.getByRole('heading', { name: /^Usage, .* \(UTC\)$/ }).waitFor();
        return (await page.locator(`svg.chart rect[data-key="${keyId}"]`).count()) === 2;
      },
      20_000,
    );
    const title = await page.locator(`svg.chart rect[data-key="${keyId}"] title`).first().textContent();
    expect(title).toMatch(/ UTC · pacs-indexer-2 \([A-Z]{12}\): 1 requests$/);
    expect(await page.locator(`tr[data-key="${keyId}"] td`).nth(2).textContent()).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC$/);
  });

  it('refuses to create a key that would be born expired', async () => {
    const expires = page.getByLabel('Expires (UTC, optional)');
    await expires.fill('2001-01-01T00:00');
    await page.getByLabel('Key name').fill('too-late');
    await page.getByRole('button', { name: 'Create key' }).click();
    expect(await expires.evaluate((input: HTMLInputElement) => input.validity.rangeUnderflow)).toBe(true);
    expect(await page.getByLabel('Full key').count()).toBe(0);
    await expires.fill('');
  });

  it('stays readable with 50 keys: top keys by name plus others, search, paging, hide revoked, last use', async () => {
    const bearer = { authorization: `Bearer ${admin.token}` };
    const day = 86_400_000;
    let n = 0;
    for (let i = 1; i < 50; i += 1) {
      const made = await (
        await page.request.post(`/api/orgs/${org}/keys`, { headers: bearer, data: { name: `worker-${String(i).padStart(2, '0')}` } })
      ).json();
      workers.push(made);
      for (let d = 2; d >= 0; d -= 1) {
        n += 1;
        await recordUsage(usage, {
          org,
          keyId: made.id,
          model: stack.svc.modelId,
          requestId: `seed-${n}`,
          tokens: 10 * i,
          time: Date.now() - d * day,
        });
      }
    }
    await page.reload();
    await page.getByRole('heading', { name: /^Usage, / }).waitFor();
    const legend = await page.getByRole('list', { name: 'Keys in the charts' }).getByRole('listitem').allTextContents();
    expect(legend).toHaveLength(9);
    expect(legend[0]).toMatch(/^worker-49 \([A-Z]{12}\)$/);
    expect(legend.at(-1)).toBe('42 other keys');
    expect(await page.locator('svg.chart rect[data-key="others"]').count()).toBeGreaterThan(0);
    await page.getByText('Show the numbers as tables').click();
    const perKey = page.getByRole('table', { name: /^Usage per key, / });
    expect(await perKey.getByRole('row').count()).toBe(10);
    expect(
      await page.getByRole('table', { name: 'Usage per model (UTC days)' }).getByRole('cell', { name: stack.svc.modelId }).count(),
    ).toBe(1);

    const keyTable = page.locator('#key-table');
    expect(await keyTable.locator('caption').textContent()).toBe('50 of 50 keys shown, page 1 of 5');
    expect(await keyTable.locator('tbody tr').count()).toBe(10);
    await page.getByRole('button', { name: 'Next keys' }).click();
    expect(await keyTable.locator('caption').textContent()).toBe('50 of 50 keys shown, page 2 of 5');
    await page.getByLabel('Search keys').fill('worker-07');
    expect(await keyTable.locator('tbody tr').count()).toBe(1);
    expect(await keyTable.locator('tbody tr td').nth(2).textContent()).toMatch(/ UTC$/);
    await page.getByLabel('Search keys').fill('');
    await page.screenshot({ path: shot('organization'), fullPage: true });
  });

  it('shows a custom UTC range, and an empty one as such', async () => {
    await page.getByLabel('Period').selectOption('custom');
    await page.getByLabel('From (UTC)').fill('2020-01-01');
    await page.getByLabel('To (UTC)').fill('2020-01-31');
    await page.getByRole('button', { name: 'Show range' }).click();
    await page.getByRole('heading', { name: 'Usage, 2020-01-01 to 2020-01-31 (UTC)' }).waitFor();
    await page.getByText('No requests from 2020-01-01 to 2020-01-31 (UTC).', { exact: false }).waitFor();
    expect(await page.getByRole('link', { name: 'Export CSV' }).getAttribute('download')).toBe(`usage-${org}-2020-01-01-to-2020-01-31.csv`);
  });

  it('revokes the key; the gateway then answers 401; "hide revoked" hides it', async () => {
    await page.getByLabel('Search keys').fill(keyId);
    await page.locator(`tr[data-key="${keyId}"]`).getByRole('button', { name: 'Revoke' }).click();
    await page.getByText(`Key ${keyId} revoked.`).waitFor();
    await page.getByLabel('Search keys').fill(keyId);
    expect(await page.locator(`tr[data-key="${keyId}"]`).count()).toBe(0);
    await page.getByLabel('Hide revoked and expired').uncheck();
    await page.locator(`tr[data-key="${keyId}"] .badge`, { hasText: 'revoked' }).waitFor();
    // Revocation reaches the gateway within authz's key-cache lifetime (1 s by default).
    let last = 0;
    await waitFor(
      'the revoked key to be refused',
      async () => {
        const response = await embed(fullKey);
        last = response.status;
        return last === 401 && response.json().code === 'revoked_api_key';
      },
      10_000,
    ).catch((error: Error) => {
      throw new Error(`${error.message}; last status ${last}`);
    });
  });

  it('sets a budget: a banner names the organization, and the hard stop answers 429 at the gateway', async () => {
    await page.getByLabel('Tokens per month (UTC)').fill('100');
    await page.getByLabel('Hard stop: refuse requests (429) once the budget is used').check();
    await page.getByRole('button', { name: 'Save budget' }).click();
    await page.getByText('Budget saved.').waitFor();
    await page.locator('#banner').getByRole('link', { name: org }).waitFor();
    expect(await page.locator('#banner').textContent()).toBe(
      `Budget alert: ${org} has used its monthly budget of 100 tokens (requests refused)`,
    );
    let last = 0;
    await waitFor(
      'the budget to stop requests',
      async () => {
        const response = await embed(workers[0]!.key);
        last = response.status;
        return (
          last === 429 &&
          /monthly token budget \(100 tokens\) is used up/.test(response.json().detail) &&
          Number(response.headers['retry-after']) > 0
        );
      },
      15_000,
    ).catch((error: Error) => {
      throw new Error(`${error.message}; last status ${last}`);
    });
    await page.getByLabel('Tokens per month (UTC)').fill('');
    await page.getByRole('button', { name: 'Save budget' }).click();
    await page.getByText('Budget removed.').waitFor();
  });

  it('lists organizations with their usage across organizations', async () => {
    await page.getByRole('link', { name: 'Organizations', exact: true }).click();
    await page.getByRole('link', { name: org }).waitFor();
    const row = page.locator('tr', { has: page.getByRole('link', { name: org }) });
    expect(Number((await row.locator('td.num').nth(1).textContent())!.replaceAll(',', ''))).toBeGreaterThan(1000);
    await page.screenshot({ path: shot('organizations') });
  });

  it('an owner adds a named viewer with a token of her own; she signs in as herself and can change nothing', async () => {
    await page.getByRole('link', { name: 'Administrators' }).click();
    await page.getByRole('heading', { name: 'Administrators' }).waitFor();
    await page.getByLabel('Name', { exact: true }).fill('viv@hospital.example');
    await page.getByLabel('Role', { exact: true }).selectOption('viewer');
    await page.getByRole('button', { name: 'Add administrator' }).click();
    await page.getByText('viv@hospital.example added as viewer.').waitFor();
    await page.getByRole('button', { name: 'New token for viv@hospital.example' }).click();
    const token = await page.getByLabel('Administrator token').inputValue();
    expect(token).toMatch(/^ctga_[0-9a-f]{12}_/);
    const other = await browser.newContext({ viewport: { width: 1280, height: 800 }, baseURL: admin.url });
    try {
      const viv = await other.newPage();
      await viv.goto('/');
      await viv.getByLabel('Administrator token').fill(token);
      await viv.keyboard.press('Enter');
      await viv.getByRole('heading', { name: 'Organizations' }).waitFor();
      expect(await viv.locator('#actor').textContent()).toBe('Signed in as admin:viv@hospital.example (viewer)');
      expect(await viv.getByRole('button', { name: 'Create organization' }).count()).toBe(0);
      expect(await viv.getByRole('link', { name: 'Administrators' }).isVisible()).toBe(false);
      const refused = await viv.request.post('/api/orgs', { data: { id: 'by-viv' }, headers: { authorization: `Bearer ${token}` } });
      expect((await refused.json()).code).toBe('admin_forbidden');
    } finally {
      await other.close();
    }
    const id = token.split('_')[1]!;
    await page.getByRole('button', { name: `Revoke ${id}` }).click();
    await page.getByText(`Token ${id} revoked.`).waitFor();
    expect((await page.request.get('/api/orgs', { headers: { authorization: `Bearer ${token}` } })).status()).toBe(401);
  });

  it('works at 390 px: nothing scrolls sideways, every action and number is on screen, chart text legible, no axe violations', async () => {
    const phone = await browser.newContext({
      viewport: { width: 390, height: 844 },
      baseURL: admin.url,
      storageState: await page.context().storageState(),
    });
    const small = await phone.newPage();
    // Left and right edges of every match, in page coordinates (what a person sees without scrolling sideways).
    const edges = (selector: string) =>
      small.$$eval(selector, (nodes) =>
        nodes.map((node) => {
          const box = node.getBoundingClientRect();
          return {
            text: (node.getAttribute('data-label') ?? node.textContent ?? '').slice(0, 40),
            left: box.left,
            right: box.right,
            width: box.width,
          };
        }),
      );
    const onScreen = async (selector: string, at: string) => {
      const found = await edges(selector);
      expect(found.length, `${at}: ${selector}`).toBeGreaterThan(0);
      for (const e of found) {
        expect(e.width, `${at}: ${selector} ${e.text}`).toBeGreaterThan(0);
        expect(e.left, `${at}: ${selector} ${e.text}`).toBeGreaterThanOrEqual(0);
        expect(e.right, `${at}: ${selector} ${e.text}`).toBeLessThanOrEqual(390);
      }
    };
    try {
      const views: Array<[string, string[]]> = [
        ['#/orgs', ['#main tbody td[data-label="Tokens"]', '#main tbody td[data-label="Budget this month"]']],
        [
          `#/orgs/${org}`,
          ['#key-table button:text-is("Rotate")', '#key-table button:text-is("Revoke")', '#key-table td[data-label="Last used"]'],
        ],
        ['#/audit', ['#main tbody td[data-label="What"]', '#main tbody td[data-label="Detail"]', '#main tbody td[data-label="Hash"]']],
        ['#/admins', ['#main tbody td.actions button']],
      ];
      for (const [hash, selectors] of views) {
        await small.goto('about:blank');
        await small.goto(`/${hash}`);
        await small.getByRole('heading', { level: 2 }).first().waitFor();
        await small.waitForLoadState('networkidle');
        expect(await small.evaluate(() => document.documentElement.scrollWidth), hash).toBeLessThanOrEqual(390);
        // No table scrolls inside its card either.
        for (const region of await small.$$eval('.scroll', (nodes) => nodes.map((n) => n.scrollWidth - n.clientWidth)))
          expect(region, `${hash}: a table scrolls sideways`).toBeLessThanOrEqual(0);
        for (const selector of selectors) await onScreen(selector, hash);
        await onScreen('button:text-is("Sign out")', hash);
        expect(await axeViolations(small), hash).toEqual([]);
        if (hash === `#/orgs/${org}`) {
          await small.locator('#key-table tbody tr').first().scrollIntoViewIfNeeded();
          await small.screenshot({ path: shot('phone'), fullPage: false });
          // Axis text as rendered: its font size times the SVG's scale on screen.
          const sizes = await small.$$eval('svg.chart text.axis', (nodes) =>
            nodes.map((n) => parseFloat(getComputedStyle(n).fontSize) * ((n as SVGGraphicsElement).getScreenCTM()?.a ?? 0)),
          );
          expect(sizes.length).toBeGreaterThan(0);
          expect(Math.min(...sizes)).toBeGreaterThanOrEqual(11);
        }
      }
    } finally {
      await phone.close();
    }
  });

  it('has no axe-core violations on any page at desk width; chart text is legible there too', async () => {
    for (const hash of ['#/orgs', `#/orgs/${org}`, '#/audit', '#/admins']) {
      await page.goto('about:blank');
      await page.goto(`/${hash}`);
      await page.getByRole('heading', { level: 2 }).first().waitFor();
      await page.waitForLoadState('networkidle');
      expect(await axeViolations(page), hash).toEqual([]);
    }
    const sizes = await page.$$eval('svg.chart text.axis', (nodes) =>
      nodes.map((n) => parseFloat(getComputedStyle(n).fontSize) * ((n as SVGGraphicsElement).getScreenCTM()?.a ?? 0)),
    );
    expect(Math.min(...sizes)).toBeGreaterThanOrEqual(11);
  });

  it('shows the audit trail filtered, paged and exported, and verifies its keyed chain; nothing carries the text', async () => {
    await page.getByRole('link', { name: 'Audit trail' }).click();
    await page.getByRole('heading', { name: 'Audit trail' }).waitFor();
    await page.getByRole('button', { name: 'Verify the chain' }).click();
    await page.getByText(/^Chain verified: \d+ records, \d+ signed checkpoints/).waitFor();
    expect(await page.getByRole('button', { name: 'Older records' }).isEnabled()).toBe(true);
    await page.getByLabel('What (starts with, e.g. key.)').fill('key.');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page
      .locator('tbody tr')
      .first()
      .locator('td:nth-child(4)', { hasText: /^key\.revoke$/ })
      .waitFor();
    const actions = await page.locator('tbody tr td:nth-child(4)').allTextContents();
    // The newest 50 key actions: the revocation, then the 49 keys made for the organization.
    expect(actions).toHaveLength(50);
    expect(actions[0]).toBe('key.revoke');
    expect(actions.slice(1).every((action) => action === 'key.create')).toBe(true);
    expect(await page.locator('tbody tr td:nth-child(3)').first().textContent()).toBe('admin:local-owner');
    await page.getByRole('button', { name: 'Older records' }).click();
    // The older page has a way back; the first page has none.
    await page.locator('button:enabled', { hasText: 'Newer records' }).click();
    await page.locator('button:disabled', { hasText: 'Newer records' }).waitFor();
    await page.screenshot({ path: shot('audit') });
    const exported = await page.request.get((await page.getByRole('link', { name: 'Export CSV' }).getAttribute('href')) as string);
    expect(exported.headers()['content-disposition']).toMatch(/^attachment; filename="audit-action-key.-start-to-\d{8}T\d{6}Z\.csv"$/);
    expect(
      (await exported.text())
        .split('\n')
        .slice(1, -1)
        .every((line) => line.split(',')[3]!.startsWith('key.')),
    ).toBe(true);
    const audit = await page.request.get('/api/audit?limit=500');
    const csv = await page.request.get(`/api/usage/export?format=csv&org=${org}`);
    expect((await csv.text()).split('\n')[1]).toMatch(new RegExp(`,${org},`));
    for (const text of [await audit.text(), await csv.text(), await exported.text()]) expect(text).not.toContain(CANARY);
  });

  it('disables the organization (its keys get 403), then deletes it (usage and audit stay)', async () => {
    await page.goto(`/#/orgs/${org}`);
    await page.getByRole('button', { name: 'Disable organization' }).click();
    await page.getByText(`Organization ${org} disabled.`).waitFor();
    await waitFor('the disabled organization to be refused', async () => (await embed(workers[1]!.key)).status === 403, 10_000);
    await page.getByRole('button', { name: 'Delete organization' }).click();
    await page.getByText(`Organization ${org} deleted; its usage and audit records are kept.`).waitFor();
    expect(await page.getByRole('link', { name: org }).count()).toBe(0);
    const csv = await page.request.get(`/api/usage/export?format=csv&org=${org}`);
    expect((await csv.text()).trim().split('\n').length).toBeGreaterThan(100);
  });

  it('serves a favicon, and the page reported no script or CSP errors', async () => {
    expect(await page.locator('link[rel="icon"]').getAttribute('href')).toBe('/console/favicon.svg');
    const icon = await page.request.get('/console/favicon.svg');
    expect(icon.headers()['content-type']).toBe('image/svg+xml');
    expect(pageErrors).toEqual([]);
  });
});
