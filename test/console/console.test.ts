/**
 * The management console in a real headless Chromium (Debian's /usr/bin/chromium driven by
 * playwright-core) against the real stack (Envoy, authz, the embedder on the generated test
 * model) and the admin server on the same Redis prefix: sign in, create an organization, create
 * a key and embed with it through the gateway, see the usage in the chart, revoke the key and
 * see 401, verify the audit chain. Controls are found by their accessible names and labels, so
 * the test also fails when the page loses them. Screenshots go to the stack's temp directory, or
 * to docs/ with CONSOLE_SCREENSHOT_DIR=docs (how docs/console-*.png are refreshed).
 */
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../support/process.js';
import { repoRoot, startStack, type Stack } from '../support/stack.js';
import { startAdminServer, type AdminServer } from './admin-server.js';

// A string no record may contain: it is the embedded text.
const CANARY = 'CANARY-7f3a-patient-reports-chest-pain';
const shot = (name: string) => join(process.env.CONSOLE_SCREENSHOT_DIR ? join(repoRoot, process.env.CONSOLE_SCREENSHOT_DIR) : stack.dirs.dir, `console-${name}.png`);

let stack: Stack;
let admin: AdminServer;
let browser: Browser;
let page: Page;
// Script errors and CSP violations the page reports (a refused API call's "Failed to load
// resource" line is expected: the page asks for its session before signing in).
const pageErrors: string[] = [];

beforeAll(async () => {
  stack = await startStack(join(repoRoot, '.local/models/test'));
  admin = await startAdminServer(stack);
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, baseURL: admin.url });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: admin.url });
  page = await context.newPage();
  page.on('dialog', (dialog) => void dialog.accept());
  page.on('pageerror', (error) => void pageErrors.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) pageErrors.push(message.text());
  });
});

afterAll(async () => {
  await browser?.close();
  await admin?.process.stop();
  await stack?.stop();
});

function embed(key: string) {
  return stack.request({
    method: 'POST', path: '/v1/embeddings',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: stack.svc.modelId, input: CANARY }),
  });
}

describe('management console (headless Chromium)', () => {
  const org = `clinic-${Date.now().toString(36)}`;
  let keyId = '';
  let fullKey = '';

  it('signs in with the admin token by keyboard', async () => {
    await page.goto('/');
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(await page.getByRole('button', { name: 'Sign out' }).isVisible()).toBe(false);
    expect(await page.getByRole('navigation', { name: 'Sections' }).isVisible()).toBe(false);
    await page.screenshot({ path: shot('sign-in') });
    await page.getByLabel('Admin token').fill(admin.token);
    await page.getByLabel('Your name (recorded in the audit trail)').fill('alice');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Organizations' }).waitFor();
    expect(await page.locator('#actor').textContent()).toBe('Signed in as token:alice');
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

  it('shows the usage in the chart, per key', async () => {
    // Usage reaches Redis asynchronously (Envoy flushes its access log about once a second);
    // 20 s is generous on the shared 2-core machine.
    await waitFor('the usage to show in the chart', async () => {
      await page.reload();
      await page.getByRole('heading', { name: 'Usage' }).waitFor();
      return (await page.locator(`svg.chart rect[data-key="${keyId}"]`).count()) === 2;
    }, 20_000);
    const title = await page.locator(`svg.chart rect[data-key="${keyId}"] title`).first().textContent();
    expect(title).toMatch(new RegExp(`key ${keyId}: 1 requests$`));
    await page.screenshot({ path: shot('organization'), fullPage: true });
    // The same numbers as a table, for screen readers and exact values.
    await page.getByText('Show the numbers as a table').click();
    expect(await page.getByRole('table', { name: 'Usage per day (UTC)' }).getByRole('cell', { name: new RegExp(`^${keyId}: 1 / \\d+$`) }).count()).toBe(1);
  });

  it('revokes the key; the gateway then answers 401', async () => {
    await page.locator(`tr[data-key="${keyId}"]`).getByRole('button', { name: 'Revoke' }).click();
    await page.getByText(`Key ${keyId} revoked.`).waitFor();
    await page.locator(`tr[data-key="${keyId}"] .badge`, { hasText: 'revoked' }).waitFor();
    // Revocation reaches the gateway within authz's key-cache lifetime (1 s by default).
    let last = 0;
    await waitFor('the revoked key to be refused', async () => {
      const response = await embed(fullKey);
      last = response.status;
      return last === 401 && response.json().code === 'revoked_api_key';
    }, 10_000).catch((error: Error) => {
      throw new Error(`${error.message}; last status ${last}`);
    });
  });

  it('lists organizations', async () => {
    await page.getByRole('link', { name: 'Organizations', exact: true }).click();
    await page.getByRole('link', { name: org }).waitFor();
    await page.screenshot({ path: shot('organizations') });
  });

  it('shows the audit trail and verifies its chain; nothing in it or in the export carries the text', async () => {
    await page.getByRole('link', { name: 'Audit trail' }).click();
    await page.getByRole('heading', { name: 'Audit trail' }).waitFor();
    await page.getByRole('button', { name: 'Verify the chain' }).click();
    await page.getByText(/^Chain verified: \d+ records/).waitFor();
    const actions = await page.locator('tbody tr td:nth-child(4)').allTextContents();
    expect(actions.slice(0, 5)).toEqual(['key.revoke', 'key.update', 'key.create', 'org.create', 'session.create']);
    await page.screenshot({ path: shot('audit') });
    const audit = await page.request.get('/api/audit?limit=500');
    const csv = await page.request.get(`/api/usage/export?format=csv&org=${org}`);
    expect((await csv.text()).split('\n')[1]).toMatch(new RegExp(`,${org},${keyId},`));
    for (const text of [await audit.text(), await csv.text()]) expect(text).not.toContain(CANARY);
    expect(pageErrors).toEqual([]);
  });
});
