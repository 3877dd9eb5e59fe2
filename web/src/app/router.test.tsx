import { act, screen, waitFor } from '@testing-library/react';
import { mockApi } from '../test/fetch-mock';
import { renderApp } from './testing';

describe('router', () => {
  beforeEach(() => {
    mockApi();
  });

  it('sends an unknown path to the / page', async () => {
    const router = await renderApp('/no-such-page');

    expect(await screen.findByRole('heading', { level: 1, name: /welcome to helpnow/i }, { timeout: 5000 })).toBeTruthy();
    expect(router.state.location.pathname).toBe('/');
  });

  it('shows the header with Login and Subscribe links and the product name from the server', async () => {
    mockApi({
      'GET /api/public-config': {
        body: { productName: 'FixItNow', assistantName: 'Ann', supportEmail: 'a@b.example', debugTools: false },
      },
    });
    await renderApp('/');

    expect(await screen.findByRole('link', { name: 'FixItNow' })).toBeTruthy();
    expect((await screen.findByRole('link', { name: 'Login' })).getAttribute('href')).toBe('/login');
    // The members page opens the trial prompt for this parameter.
    expect(screen.getByRole('link', { name: 'Subscribe' }).getAttribute('href')).toBe('/?subscribe=true');
  });

  it('shows the signed-in email and Logout instead', async () => {
    mockApi({ 'GET /api/auth/me': { body: { user: { id: 'u1', email: 'ann@example.com' } } } });
    await renderApp('/');

    expect(await screen.findByText('ann@example.com')).toBeTruthy();
    expect(screen.getByRole('link', { name: 'Logout' })).toBeTruthy();
    expect(screen.queryByRole('link', { name: 'Login' })).toBeNull();
  });

  it('leads a session that must choose a new password to account setup from any page', async () => {
    mockApi({
      'GET /api/auth/me': { body: { user: { id: 'u1', email: 'ann@example.com', mustChoosePassword: true } } },
      'GET /api/account/setup': {
        body: { email: 'ann@example.com', hasPassword: false, mustChoosePassword: true, trialActive: false, trialEndDate: null },
      },
    });
    const router = await renderApp('/admin');
    await waitFor(() => expect(router.state.location.pathname).toBe('/account-setup'));
    expect(new URLSearchParams(router.state.location.search).get('email')).toBe('ann@example.com');
    expect(
      await screen.findByText(
        'Your email address is confirmed. For your safety, choose a new password before you go on. Any other device signed in to this account has been signed out.',
      ),
    ).toBeTruthy();
  });

  it('takes /members (where sign-in leads) to the members page', async () => {
    const router = await renderApp('/members');
    await waitFor(() => expect(router.state.location.pathname).toBe('/'));
  });

  it('renders the landing page on /landing', async () => {
    await renderApp('/landing');

    expect(
      screen.getByRole('heading', { level: 1 }).textContent?.startsWith(
        'Easily Access Your Favorite Sites. Select Your Shortcuts...',
      ),
    ).toBe(true);
    expect(screen.getByText('Free 7-Day Trial, Then Only $20/month. No commitments.')).toBeTruthy();
    expect(screen.getByRole('heading', { name: 'How It Works' })).toBeTruthy();
    await screen.findByRole('button', { name: 'Yahoo Mail' });
  });

  it.each(['/get-help', '/funnel', '/Chat-Help-2', '/email-help', '/login', '/signup',
    '/account-setup', '/checkout-success', '/admin', '/admin/flows', '/admin/checkout-debug', '/demo-checkout/abc123'])(
    'keeps %s (a page of the route table) with the footer',
    async (path) => {
      const router = await renderApp(path);
      await waitFor(() => expect(router.state.location.pathname).toBe(path));
      expect(screen.getByRole('heading', { level: 1 })).toBeTruthy();
      expect(screen.getByRole('button', { name: 'Privacy Policy' })).toBeTruthy();
    },
  );

  it('leads the checkout debug page\'s first address to its place under the dashboard', async () => {
    const router = await renderApp('/checkout-debug');
    await waitFor(() => expect(router.state.location.pathname).toBe('/admin/checkout-debug'));
  });

  it("keeps no campaign from an operator's preview of a draft flow", async () => {
    await renderApp('/chat-help?preview=pv1&keyword=printer&campaignid=77');
    expect(window.localStorage.getItem('utm_params')).toBeNull();
  });

  it('keeps the campaign of an ad’s visit (the same page without a preview)', async () => {
    await renderApp('/chat-help?keyword=printer&campaignid=77');
    expect(JSON.parse(window.localStorage.getItem('utm_params') ?? 'null')).toMatchObject({ campaignid: '77' });
  });

  it('leaves the site footer off /chat-help, where the chat funnel has its own', async () => {
    const router = await renderApp('/chat-help');
    await waitFor(() => expect(router.state.location.pathname).toBe('/chat-help'));
    expect(screen.getByRole('heading', { level: 1 })).toBeTruthy();
    expect(document.querySelector('.site-footer')).toBeNull();
    expect(screen.getAllByRole('button', { name: 'Privacy Policy' })).toHaveLength(1);
  });

  it('reports a page view for each page the app moves to, but not the page the server served', async () => {
    const views: string[] = [];
    mockApi({
      'POST /api/events': (init) => {
        const body = JSON.parse(String(init?.body)) as { name: string; path: string };
        if (body.name === 'page_view') views.push(body.path);
        return { status: 201, body: { id: 'analytics_event:1' } };
      },
    });
    const router = await renderApp('/landing?campaignid=c1', { strict: true });
    await act(async () => {
      await router.navigate('/login');
    });
    await act(async () => {
      await router.navigate('/login?reset=abc');
    });
    await act(async () => {
      await router.navigate('/get-help');
    });
    await waitFor(() => expect(views).toEqual(['/login', '/get-help']));
  });
});
