import { fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { mockApi } from '../../test/fetch-mock';
import { DeleteAccount } from './DeleteAccount';

const DELETED = {
  deleted: { chats: 2, messages: 9, tasks: 1, funnelConversations: 1, visitors: 1, events: 14 },
  subscriptionCanceled: true,
  message: 'The account ann@example.com and everything it held were deleted. Its subscription was canceled.',
};

function typePassword(password: string) {
  fireEvent.change(within(screen.getByRole('dialog')).getByLabelText('Your password'), { target: { value: password } });
}

function typeAndAsk(email: string) {
  fireEvent.change(screen.getByLabelText('Email address'), { target: { value: email } });
  fireEvent.click(screen.getByRole('button', { name: 'Delete account' }));
}

describe('DeleteAccount', () => {
  it('asks first, then deletes the account and says what went with it', async () => {
    const fetchMock = mockApi({ 'POST /api/admin/accounts/delete': { body: DELETED } });
    render(<DeleteAccount />);
    typeAndAsk(' ann@example.com ');
    const dialog = screen.getByRole('dialog', { name: 'Delete account' });
    expect(within(dialog).getByText(/Are you sure you want to delete the account ann@example.com\?/)).toBeTruthy();
    expect(fetchMock).not.toHaveBeenCalled();

    // The admin's own password first.
    fireEvent.click(within(dialog).getByRole('button', { name: 'Delete' }));
    expect(within(dialog).getByRole('alert').textContent).toBe('Enter your own password to delete an account.');
    expect(fetchMock).not.toHaveBeenCalled();
    typePassword('admin-secret');
    fireEvent.click(within(dialog).getByRole('button', { name: 'Delete' }));
    const done = await screen.findByRole('status');
    expect(done.textContent).toBe(
      `${DELETED.message} Gone with it: 2 chats, 1 task, 1 funnel conversation and 14 analytics events.`,
    );
    expect(screen.queryByRole('dialog')).toBeNull();
    const [, init] = fetchMock.mock.calls[0];
    expect(JSON.parse(String(init?.body))).toEqual({ email: 'ann@example.com', password: 'admin-secret' });
    expect((screen.getByLabelText('Email address') as HTMLInputElement).value).toBe('');
  });

  it('deletes nothing when the admin cancels, and asks for an address', () => {
    const fetchMock = mockApi({ 'POST /api/admin/accounts/delete': { body: DELETED } });
    render(<DeleteAccount />);
    typeAndAsk('   ');
    expect(screen.getByRole('alert').textContent).toBe('Enter the email address of the account to delete.');
    typeAndAsk('ann@example.com');
    fireEvent.click(within(screen.getByRole('dialog')).getByRole('button', { name: 'Cancel' }));
    expect(screen.queryByRole('dialog')).toBeNull();
    expect(fetchMock).not.toHaveBeenCalled();
  });

  it("shows the server's words when it refuses", async () => {
    mockApi({
      'POST /api/admin/accounts/delete': {
        status: 404,
        body: { error: 'user_not_found', message: 'No account found with the address bob@example.com.' },
      },
    });
    render(<DeleteAccount />);
    typeAndAsk('bob@example.com');
    typePassword('admin-secret');
    fireEvent.click(within(screen.getByRole('dialog')).getByRole('button', { name: 'Delete' }));
    await waitFor(() =>
      expect(screen.getByRole('alert').textContent).toBe('No account found with the address bob@example.com.'),
    );
  });

  it('keeps asking while the password is wrong, and deletes nothing', async () => {
    mockApi({
      'POST /api/admin/accounts/delete': {
        status: 401,
        body: { error: 'wrong_password', message: 'Incorrect password. Please try again.' },
      },
    });
    render(<DeleteAccount />);
    typeAndAsk('ann@example.com');
    typePassword('not-mine');
    const dialog = screen.getByRole('dialog', { name: 'Delete account' });
    fireEvent.click(within(dialog).getByRole('button', { name: 'Delete' }));
    await waitFor(() =>
      expect(within(dialog).getByRole('alert').textContent).toBe('Incorrect password. Please try again.'),
    );
    expect(screen.queryByRole('status')).toBeNull();
  });
});
