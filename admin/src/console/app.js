// The console's shell: sign-in (an administrator token, or single sign-on when configured), the
// signed-in administrator and role, the budget banner on every page, and hash routes (#/orgs,
// #/orgs/<id>, #/audit, #/admins) so the back button and bookmarks work.
import { api } from './api.js';
import { setCsrfToken } from './api.js';
import { adminsView } from './admins.js';
import { auditView } from './audit.js';
import { count, field, h, show } from './dom.js';
import { orgView } from './org.js';
import { orgsView } from './orgs.js';
import { alertText, attempt, fail, go, may, say, state, takePending, whenSignedOut } from './ui.js';

const main = document.getElementById('main');
const banner = document.getElementById('banner');

const SIGN_IN_ERRORS = {
  not_an_administrator:
    'Single sign-on worked, but that account is not an administrator here. Ask an owner to add you by your e-mail address.',
  no_verified_email: 'The identity provider did not vouch for an e-mail address.',
  provider_answer_refused: "The identity provider's answer was refused; try again.",
  no_pending_sign_in: 'That sign-in had expired or was already used; try again.',
  too_many_attempts: 'Too many refused sign-ins from here in the last few minutes; wait a little, or sign in with your token.',
  provider_unavailable: 'The identity provider did not answer; try again in a moment, or sign in with your token.',
};

function signedIn(value) {
  state.session = value;
  setCsrfToken(value.csrfToken);
  document.getElementById('actor').textContent = `Signed in as ${value.actor} (${value.role})`;
  document.getElementById('nav').hidden = false;
  document.getElementById('who').hidden = false;
  document.getElementById('nav-admins').hidden = !may('owner');
}

function signedOut() {
  state.session = null;
  document.getElementById('nav').hidden = true;
  document.getElementById('who').hidden = true;
  banner.hidden = true;
  signInView().catch(fail);
}

async function signInView() {
  const token = h('input', { type: 'password', name: 'token', required: true, autocomplete: 'current-password' });
  const form = h(
    'form',
    {
      class: 'card narrow',
      onsubmit: (event) => {
        event.preventDefault();
        void attempt(async () => {
          signedIn(await api('POST', '/api/session', { token: token.value }));
          go('#/orgs', 'Signed in.', route);
        });
      },
    },
    h('h2', {}, 'Sign in'),
    field('Administrator token', token, 'Your own token (an owner creates it), or locally the one in .local/admin-token.'),
    h('button', { type: 'submit' }, 'Sign in'),
  );
  show(main, form);
  const refused = new URLSearchParams(location.search).get('sign_in_error');
  if (refused) alertText(SIGN_IN_ERRORS[refused] ?? 'Single sign-on failed.');
  const options = await api('GET', '/api/sign-in-options').catch(() => ({ oidc: false }));
  if (options.oidc)
    form.insertBefore(h('p', {}, h('a', { class: 'button', href: '/api/oidc/start' }, 'Sign in with single sign-on')), form.children[1]);
}

// Organizations past an alert threshold of their monthly budget, named on every page.
async function showBudgetBanner() {
  const { budgets } = await api('GET', '/api/budgets');
  const alerting = budgets.filter((b) => b.alertPercent !== null);
  banner.hidden = alerting.length === 0;
  banner.replaceChildren(
    ...(alerting.length === 0
      ? []
      : [
          h('strong', {}, 'Budget alert: '),
          ...alerting.flatMap((b, i) => [
            i > 0 ? '; ' : '',
            h('a', { href: `#/orgs/${encodeURIComponent(b.org)}` }, b.org),
            b.exhausted
              ? ` has used its monthly budget of ${count(b.monthlyTokens)} tokens${b.hardStop ? ' (requests refused)' : ''}`
              : ` is at ${b.percent}% of its monthly budget of ${count(b.monthlyTokens)} tokens`,
          ]),
        ]),
  );
}

async function route() {
  say(takePending());
  if (!state.session) return signInView();
  const hash = location.hash || '#/orgs';
  await attempt(async () => {
    await showBudgetBanner();
    const org = /^#\/orgs\/(.+)$/.exec(hash);
    if (org) await orgView(main, decodeURIComponent(org[1]), state.session, route);
    else if (hash === '#/audit') await auditView(main);
    else if (hash === '#/admins' && may('owner')) await adminsView(main);
    else await orgsView(main, route);
  });
}

whenSignedOut(signedOut);
state.refreshBanner = showBudgetBanner;
document.getElementById('sign-out').addEventListener('click', () =>
  attempt(async () => {
    await api('DELETE', '/api/session');
    say('Signed out.');
    signedOut();
  }),
);
window.addEventListener('hashchange', route);

// An existing session (sessions live in Redis and survive restarts), else the sign-in form.
try {
  signedIn(await api('GET', '/api/session'));
  if (location.search) history.replaceState(null, '', `/${location.hash}`);
} catch {
  state.session = null;
}
route().catch(fail);
