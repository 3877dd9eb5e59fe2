import { act, fireEvent, render, screen, waitFor } from '@testing-library/react';
import { createMemoryRouter, RouterProvider } from 'react-router';
import { vi } from 'vitest';
import { PublicConfigProvider } from '../../lib/public-config';
import { SessionProvider, useSession } from '../../lib/session';
import { mockApi } from '../../test/fetch-mock';
import { AccountSetupPage } from './AccountSetupPage';

const FROM_CHECKOUT = '/account-setup?success=true&session=s1&session_id=cs_1&email=ann%40example.com';
const NEW_ACCOUNT = { email: 'ann@example.com', hasPassword: false, trialActive: true, trialEndDate: '2030-01-08' };
const NO_SESSION = {
  status: 404,
  body: { error: 'no_session', message: 'No session information found. Please contact support.' },
};

/** Shows who the session says is signed in, as the header would. */
function SignedInAs() {
  const { user } = useSession();
  return <p data-testid="signed-in">{user?.email ?? ''}</p>;
}

function renderSetup(path = FROM_CHECKOUT) {
  const router = createMemoryRouter(
    [
      {
        path: '/account-setup',
        element: (
          <>
            <AccountSetupPage />
            <SignedInAs />
          </>
        ),
      },
      { path: '/', element: <h1>Members</h1> },
      { path: '/login', element: <h1>Sign in</h1> },
    ],
    { initialEntries: [path] },
  );
  render(
    <PublicConfigProvider>
      <SessionProvider>
        <RouterProvider router={router} />
      </SessionProvider>
    </PublicConfigProvider>,
  );
  return router;
}

function fill(values: { email?: string; password?: string; confirm?: string }) {
  if (values.email !== undefined) fireEvent.change(screen.getByLabelText('Email'), { target: { value: values.email } });
  if (values.password !== undefined) {
    fireEvent.change(screen.getByLabelText('Password'), { target: { value: values.password } });
  }
  if (values.confirm !== undefined) {
    fireEvent.change(screen.getByLabelText('Confirm Password'), { target: { value: values.confirm } });
  }
}

function submit() {
  fireEvent.click(screen.getByRole('button', { name: 'Access Account' }));
}

afterEach(() => {
  vi.useRealTimers();
});

describe('AccountSetupPage', () => {
  it('is only for checkout completion', async () => {
    const fetchMock = mockApi();
    const router = renderSetup('/account-setup?email=ann%40example.com');
    expect(screen.getByRole('alert').textContent).toBe('Invalid access. This page is for checkout completion only.');
    expect(fetchMock.mock.calls.some(([url]) => url === '/api/account/setup')).toBe(false);

    fireEvent.click(screen.getByRole('button', { name: 'Return to Home' }));
    await waitFor(() => expect(router.state.location.pathname).toBe('/'));
  });

  it('checks the subscription first, then asks for a password with the email locked', async () => {
    let answer: (reply: { body: unknown }) => void = () => {};
    mockApi({ 'GET /api/account/setup': () => new Promise((resolve) => (answer = resolve)) });
    renderSetup();
    expect(screen.getByRole('heading', { level: 1, name: 'Choose a password' })).toBeTruthy();
    expect(screen.getByText('Checking your subscription status...')).toBeTruthy();
    expect(screen.queryByLabelText('Password')).toBeNull();

    answer({ body: { ...NEW_ACCOUNT, email: 'server@example.com' } });
    const email = (await screen.findByLabelText('Email')) as HTMLInputElement;
    expect(email.value).toBe('server@example.com');
    expect(email.readOnly).toBe(true);
    expect(screen.getByLabelText('Confirm Password')).toBeTruthy();
    expect(screen.getByRole('button', { name: 'Access Account' })).toBeTruthy();
  });

  it('lets the person type an email when neither the query nor the server has one', async () => {
    // The server did not answer (a restart, say): the form still works from the query.
    mockApi({ 'GET /api/account/setup': { status: 503, body: {} } });
    renderSetup('/account-setup?success=true');
    const email = (await screen.findByLabelText('Email')) as HTMLInputElement;
    expect(email.value).toBe('');
    expect(email.readOnly).toBe(false);
    fill({ password: 'secret1', confirm: 'secret1' });
    submit();
    expect(screen.getByRole('alert').textContent).toBe('Email is required');
  });

  it("says the server's own answers as they are and any other error as 'Error: {message}'", async () => {
    let reply: { status: number; body: unknown } = {
      status: 401,
      body: { error: 'wrong_password', message: 'Incorrect password for existing account' },
    };
    mockApi({ 'GET /api/account/setup': { body: NEW_ACCOUNT }, 'POST /api/account/setup': () => reply });
    renderSetup();
    await screen.findByLabelText('Confirm Password');
    fill({ password: 'secret1', confirm: 'secret1' });
    submit();
    await waitFor(() => expect(screen.getByRole('alert').textContent).toBe('Incorrect password for existing account'));

    reply = { status: 500, body: { error: 'internal', message: 'Something went wrong on our side.' } };
    submit();
    await waitFor(() =>
      expect(screen.getByRole('alert').textContent).toBe('Error: Something went wrong on our side.'),
    );
  });

  it('checks the password and its confirmation in the spec words', async () => {
    const fetchMock = mockApi({ 'GET /api/account/setup': { body: NEW_ACCOUNT } });
    renderSetup();
    await screen.findByLabelText('Confirm Password');

    submit();
    expect(screen.getByRole('alert').textContent).toBe('Password is required');
    fill({ password: 'secret1', confirm: 'secret2' });
    submit();
    expect(screen.getByRole('alert').textContent).toBe('Passwords do not match');
    expect(fetchMock.mock.calls.some(([, init]) => init?.method === 'POST')).toBe(false);
  });

  it('is busy while creating the account, signs in, shows the trial and goes home after 3 seconds', async () => {
    let answer: (reply: { body: unknown }) => void = () => {};
    const fetchMock = mockApi({
      'GET /api/account/setup': { body: NEW_ACCOUNT },
      'POST /api/account/setup': () => new Promise((resolve) => (answer = resolve)),
    });
    const router = renderSetup();
    await screen.findByLabelText('Confirm Password');
    fill({ password: 'secret1', confirm: 'secret1' });
    submit();

    const busy = (await screen.findByRole('button', { name: 'Creating Account...' })) as HTMLButtonElement;
    expect(busy.disabled).toBe(true);
    const call = fetchMock.mock.calls.find(([url, init]) => url === '/api/account/setup' && init?.method === 'POST');
    expect(JSON.parse(String(call?.[1]?.body))).toEqual({ email: 'ann@example.com', password: 'secret1' });

    // Testing Library's findBy waits on real timers, so the clock is faked only from here on.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    answer({ body: { user: { id: 'u1', email: 'ann@example.com' }, trialActive: true } });
    await act(() => vi.advanceTimersByTimeAsync(0));
    expect(screen.getByText('Trial Active')).toBeTruthy();
    expect(screen.getByRole('heading', { level: 1, name: 'Welcome to HelpNow!' })).toBeTruthy();
    expect(screen.getByTestId('signed-in').textContent).toBe('ann@example.com');

    await act(() => vi.advanceTimersByTimeAsync(2999));
    expect(router.state.location.pathname).toBe('/account-setup');
    await act(() => vi.advanceTimersByTimeAsync(1));
    expect(router.state.location.pathname).toBe('/');
  });

  it('leaves the badge off without an active trial and offers to go at once', async () => {
    mockApi({
      'GET /api/account/setup': { body: { ...NEW_ACCOUNT, trialActive: false } },
      'POST /api/account/setup': { body: { user: { id: 'u1', email: 'ann@example.com' }, trialActive: false } },
    });
    const router = renderSetup();
    await screen.findByLabelText('Confirm Password');
    fill({ password: 'secret1', confirm: 'secret1' });
    submit();
    fireEvent.click(await screen.findByRole('button', { name: 'Start Using HelpNow' }));
    expect(screen.queryByText('Trial Active')).toBeNull();
    await waitFor(() => expect(router.state.location.pathname).toBe('/'));
  });

  it('asks for the existing password when the account has one, without a confirmation', async () => {
    mockApi({
      'GET /api/account/setup': { body: { ...NEW_ACCOUNT, hasPassword: true } },
      'POST /api/account/setup': {
        status: 401,
        body: { error: 'wrong_password', message: 'Incorrect password for existing account' },
      },
    });
    renderSetup();
    expect(
      await screen.findByText('You already have an account with this email. Enter your existing password to continue.'),
    ).toBeTruthy();
    expect(screen.queryByLabelText('Confirm Password')).toBeNull();
    fill({ password: 'not-it' });
    submit();
    expect((await screen.findByRole('alert')).textContent).toBe('Incorrect password for existing account');
    expect((screen.getByRole('button', { name: 'Access Account' }) as HTMLButtonElement).disabled).toBe(false);
  });

  it('without a checkout on this device, says so at once and explains the way in', async () => {
    const fetchMock = mockApi({ 'GET /api/account/setup': NO_SESSION });
    renderSetup();

    const alert = await screen.findByRole('alert');
    expect(alert.textContent).toContain('We could not find your checkout in this browser.');
    expect(alert.textContent).toContain('sign-in link in your welcome email');
    expect(screen.getByRole('link', { name: 'Forgot password?' }).getAttribute('href')).toBe(
      '/login?email=ann%40example.com',
    );
    // No form to fill in that could not work.
    expect(screen.queryByLabelText('Password')).toBeNull();
    expect(fetchMock.mock.calls.some(([, init]) => init?.method === 'POST')).toBe(false);
  });

  it('a refused setup after the form keeps the explanation', async () => {
    mockApi({ 'GET /api/account/setup': { body: NEW_ACCOUNT }, 'POST /api/account/setup': NO_SESSION });
    renderSetup();
    await screen.findByLabelText('Confirm Password');
    fill({ password: 'secret1', confirm: 'secret1' });
    submit();
    const alert = await screen.findByRole('alert');
    expect(alert.textContent).toContain('No session information found. Please contact support.');
    expect(alert.textContent).toContain('sign-in link in your welcome email');
  });
});
