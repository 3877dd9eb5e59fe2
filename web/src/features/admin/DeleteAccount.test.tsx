import { fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { mockApi } from '../../test/fetch-mock';
import { SessionProvider } from '../../lib/session';
import { DeleteAccount, FIND_FAILED, OWN_ACCOUNT } from './DeleteAccount';
import type { AccountFound } from './operations-api';

const DELETED = {
  deleted: { chats: 2, messages: 9, tasks: 1, funnelConversations: 1, visitors: 1, events: 14 },
  subscriptionCanceled: true,
  message: 'The account ann@example.com and everything it held were deleted. Its subscription was canceled.',
};

const ANN: AccountFound = {
  email: 'ann@example.com',
  createdAt: '2026-10-03T08:15:00Z',
  plan: 'subscribed',
  planLabel: 'Subscribed ($20/month)',
  trialEndDate: null,
  currentPeriodEnd: '2026-12-03T08:15:00Z',
  subscriptionStatus: 'active',
};

const NOT_FOUND = (email: string) => ({
  status: 404,
  body: { error: 'user_not_found', message: `No account found with the address ${email}.` },
});

/** Answers the look-up for Ann's address; any other one is not found. */
const FIND = {
  'GET /api/admin/accounts': (_init: RequestInit | undefined, url: URL) =>
    url.searchParams.get('email') === ANN.email ? { body: ANN } : NOT_FOUND(url.searchParams.get('email') ?? ''),
};

function typePassword(password: string) {
  fireEvent.change(within(screen.getByRole('dialog')).getByLabelText('Your password'), { target: { value: password } });
}

function typeAndFind(email: string) {
  fireEvent.change(screen.getByLabelText('Email address'), { target: { value: email } });
  fireEvent.click(screen.getByRole('button', { name: 'Find the account' }));
}

/** Finds the account, then asks to delete it. */
async function typeAndAsk(email: string) {
  typeAndFind(email);
  const button = await screen.findByRole('button', { name: 'Delete this account' });
  button.focus();
  fireEvent.click(button);
}

function deletions(fetchMock: ReturnType<typeof mockApi>) {
  return fetchMock.mock.calls.filter(([input]) => String(input) === '/api/admin/accounts/delete');
}

describe('DeleteAccount', () => {
  it('finds the account first, shows it, then deletes it and says what went with it', async () => {
    const fetchMock = mockApi({ ...FIND, 'POST /api/admin/accounts/delete': { body: DELETED } });
    render(<DeleteAccount />);
    expect(screen.queryByRole('button', { name: 'Delete this account' })).toBeNull();
    typeAndFind(' ann@example.com ');
    expect(screen.getByRole('button', { name: 'Finding...' }).hasAttribute('disabled')).toBe(true);

    const found = await screen.findByRole('group', { name: 'The account ann@example.com' });
    const facts = Array.from(found.querySelectorAll('dt')).map((term) => [
      term.textContent,
      term.nextElementSibling?.textContent,
    ]);
    expect(facts).toEqual([
      ['Address', 'ann@example.com'],
      ['Plan', 'Subscribed ($20/month)'],
      ['Account since', '3 Oct 2026'],
    ]);
    // Screen readers hear it as it shows.
    const heard = screen.getByText('Found the account ann@example.com: Subscribed ($20/month), since 3 Oct 2026.');
    expect(heard.getAttribute('aria-live')).toBe('polite');
    const [lookup] = fetchMock.mock.calls[0];
    expect(String(lookup)).toBe('/api/admin/accounts?email=ann%40example.com');
    expect(deletions(fetchMock)).toHaveLength(0);

    fireEvent.click(within(found).getByRole('button', { name: 'Delete this account' }));
    const dialog = screen.getByRole('dialog', { name: 'Delete account' });
    expect(within(dialog).getByText(/Are you sure you want to delete the account ann@example.com\?/)).toBeTruthy();
    expect(deletions(fetchMock)).toHaveLength(0);

    // The admin's own password first.
    fireEvent.click(within(dialog).getByRole('button', { name: 'Delete' }));
    expect(within(dialog).getByRole('alert').textContent).toBe('Enter your own password to delete an account.');
    expect(deletions(fetchMock)).toHaveLength(0);
    typePassword('admin-secret');
    fireEvent.click(within(dialog).getByRole('button', { name: 'Delete' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).toBeNull());
    const done = screen.getByRole('status');
    expect(done.textContent).toBe(
      `${DELETED.message} Gone with it: 2 chats, 1 task, 1 funnel conversation and 14 analytics events.`,
    );
    const [[, init]] = deletions(fetchMock);
    expect(JSON.parse(String(init?.body))).toEqual({ email: 'ann@example.com', password: 'admin-secret' });
    const email = screen.getByLabelText('Email address') as HTMLInputElement;
    expect(email.value).toBe('');
    expect(screen.queryByRole('group')).toBeNull();
    await waitFor(() => expect(document.activeElement).toBe(email));
  });

  it('deletes nothing when the admin cancels, and asks for an address', async () => {
    const fetchMock = mockApi({ ...FIND, 'POST /api/admin/accounts/delete': { body: DELETED } });
    render(<DeleteAccount />);
    typeAndFind('   ');
    expect(screen.getByRole('alert').textContent).toBe('Enter the email address of the account to delete.');
    expect(fetchMock).not.toHaveBeenCalled();
    await typeAndAsk('ann@example.com');
    fireEvent.click(within(screen.getByRole('dialog')).getByRole('button', { name: 'Cancel' }));
    expect(screen.queryByRole('dialog')).toBeNull();
    expect(deletions(fetchMock)).toHaveLength(0);
    // The account stays on view, its button back in focus.
    expect(document.activeElement).toBe(screen.getByRole('button', { name: 'Delete this account' }));
  });

  it("shows the server's words when no account has the address, and offers no delete", async () => {
    mockApi(FIND);
    render(<DeleteAccount />);
    typeAndFind('bob@example.com');
    await waitFor(() =>
      expect(screen.getByRole('alert').textContent).toBe('No account found with the address bob@example.com.'),
    );
    expect(screen.queryByRole('button', { name: 'Delete this account' })).toBeNull();
  });

  it("offers no delete for the admin's own account, and says why", async () => {
    // Signed in as Ann: the server would refuse (409 own_account); the form says so first.
    mockApi({ ...FIND, 'GET /api/auth/me': { body: { user: { id: 'u1', email: 'Ann@example.com' } } } });
    render(
      <SessionProvider>
        <DeleteAccount />
      </SessionProvider>,
    );
    typeAndFind('ann@example.com');
    await screen.findByText(OWN_ACCOUNT);
    expect(screen.queryByRole('button', { name: 'Delete this account' })).toBeNull();
  });

  it('forgets the account found once the address changes', async () => {
    mockApi(FIND);
    render(<DeleteAccount />);
    typeAndFind('ann@example.com');
    expect(await screen.findByRole('button', { name: 'Delete this account' })).toBeTruthy();
    fireEvent.change(screen.getByLabelText('Email address'), { target: { value: 'ann@example.co' } });
    expect(screen.queryByRole('button', { name: 'Delete this account' })).toBeNull();
  });

  it('says when the look-up failed', async () => {
    mockApi({ 'GET /api/admin/accounts': { status: 500, body: { error: 'internal', message: 'boom' } } });
    render(<DeleteAccount />);
    typeAndFind('ann@example.com');
    await waitFor(() => expect(screen.getByRole('alert').textContent).toBe(FIND_FAILED));
  });

  it("shows the server's words when it refuses the deletion", async () => {
    mockApi({
      ...FIND,
      'POST /api/admin/accounts/delete': NOT_FOUND('ann@example.com'),
    });
    render(<DeleteAccount />);
    await typeAndAsk('ann@example.com');
    typePassword('admin-secret');
    fireEvent.click(within(screen.getByRole('dialog')).getByRole('button', { name: 'Delete' }));
    await waitFor(() =>
      expect(screen.getByRole('alert').textContent).toBe('No account found with the address ann@example.com.'),
    );
    // Gone meanwhile: nothing is left to delete.
    expect(screen.queryByRole('button', { name: 'Delete this account' })).toBeNull();
  });

  it('keeps asking while the password is wrong, and deletes nothing', async () => {
    mockApi({
      ...FIND,
      'POST /api/admin/accounts/delete': {
        status: 401,
        body: { error: 'wrong_password', message: 'Incorrect password. Please try again.' },
      },
    });
    render(<DeleteAccount />);
    await typeAndAsk('ann@example.com');
    typePassword('not-mine');
    const dialog = screen.getByRole('dialog', { name: 'Delete account' });
    fireEvent.click(within(dialog).getByRole('button', { name: 'Delete' }));
    await waitFor(() =>
      expect(within(dialog).getByRole('alert').textContent).toBe('Incorrect password. Please try again.'),
    );
    expect(screen.queryByText(/Gone with it/)).toBeNull();
  });
});
