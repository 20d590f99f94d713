/**
 * A browser reduced to what a single sign-on needs: cookies per origin, redirects followed by
 * hand, and the provider's own login and consent forms submitted (the oidc-provider package's
 * development interactions). Used against the admin server in-process (test/admin/oidc.test.ts)
 * and in the image test, where names of the pod network stand in for hosts (`send`).
 */

/** One HTTP exchange without following redirects (global fetch with redirect: 'manual' by default). */
export type Send = (url: URL, init: { method?: string; body?: string; headers: Record<string, string> }) => Promise<Response>;

const manualFetch: Send = (url, init) => fetch(url, { ...init, redirect: 'manual' });

export class OidcWalker {
  private readonly jar = new Map<string, Map<string, string>>();
  readonly visited: string[] = [];

  /**
   * @param consoleOrigin the admin server's origin: the walk ends on its page `/`
   * @param send how requests leave (default: global fetch)
   */
  constructor(
    private readonly consoleOrigin: string,
    private readonly send: Send = manualFetch,
  ) {}

  private cookies(url: URL): string {
    return [...(this.jar.get(url.origin) ?? new Map()).entries()].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  private keep(url: URL, response: Response): void {
    const jar = this.jar.get(url.origin) ?? new Map<string, string>();
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(';');
      const [name, ...value] = pair!.trim().split('=');
      const expired = attributes.some((a) => /^\s*max-age=0\s*$/i.test(a)) || value.join('=') === '';
      if (expired) jar.delete(name!);
      else jar.set(name!, value.join('='));
    }
    this.jar.set(url.origin, jar);
  }

  /** The cookie `name` this browser holds for `origin`. */
  cookie(origin: string, name: string): string | undefined {
    return this.jar.get(origin)?.get(name);
  }

  /** Requests `start`, follows redirects and submits forms (login as `login`) until the console's page. */
  async walk(start: string, login: string): Promise<URL> {
    let url = new URL(start);
    let init: { method?: string; body?: string; headers: Record<string, string> } = { headers: {} };
    for (let hop = 0; hop < 20; hop += 1) {
      this.visited.push(url.href);
      const response = await this.send(url, { ...init, headers: { ...init.headers, cookie: this.cookies(url) } });
      this.keep(url, response);
      init = { headers: {} };
      const location = response.headers.get('location');
      if (response.status >= 300 && response.status < 400 && location) {
        url = new URL(location, url);
        if (url.origin === this.consoleOrigin && url.pathname === '/') return url;
        continue;
      }
      const html = await response.text();
      const form = /<form[^>]*action="([^"]+)"[^>]*method="post"/i.exec(html);
      if (!form) throw new Error(`stuck at ${url.href} (${response.status}): ${html.slice(0, 200)}`);
      const fields = new URLSearchParams();
      for (const [, name, value] of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)) fields.set(name!, value!);
      if (html.includes('name="login"')) {
        fields.set('login', login);
        fields.set('password', 'any');
      }
      url = new URL(form[1]!.replaceAll('&amp;', '&'), url);
      init = { method: 'POST', body: fields.toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } };
    }
    throw new Error('too many hops');
  }
}
