import { act, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { SessionProvider } from '../../lib/session';
import { mockApi } from '../../test/fetch-mock';
import { SELECTED_ICONS_KEY } from './selection-storage';
import { SelectedShortcuts, ShortcutsDialog } from './ShortcutsDialog';

const ACCOUNT_SAVE_FAILED =
  'Your shortcuts are saved on this device, but could not be saved to your account. Please try again.';

function storedNames(): unknown {
  return JSON.parse(window.localStorage.getItem(SELECTED_ICONS_KEY) ?? 'null');
}

function accountSaves(fetchMock: ReturnType<typeof mockApi>): unknown[] {
  return fetchMock.mock.calls
    .filter(([url, init]) => url === '/api/account/shortcuts' && init?.method === 'PUT')
    .map(([, init]) => JSON.parse(String(init?.body)));
}

function ticked(name: string): boolean {
  return (screen.getByRole('checkbox', { name }) as HTMLInputElement).checked;
}

function renderDialog(props: { signedIn: boolean; savedOnAccount?: string[] }) {
  const onClose = vi.fn<() => void>();
  const onSaved = vi.fn<(names: string[]) => void>();
  render(<ShortcutsDialog open onClose={onClose} onSaved={onSaved} {...props} />);
  return { onClose, onSaved };
}

describe('ShortcutsDialog', () => {
  it('shows nothing while closed', () => {
    mockApi();
    render(<ShortcutsDialog open={false} onClose={() => {}} signedIn={false} />);
    expect(screen.queryByRole('dialog')).toBeNull();
  });

  it('lists every site with its icon and starts from the choice on this device', async () => {
    mockApi();
    window.localStorage.setItem(SELECTED_ICONS_KEY, JSON.stringify(['Zoom']));
    renderDialog({ signedIn: false, savedOnAccount: ['Gmail'] });

    const dialog = screen.getByRole('dialog', { name: 'Select Additional Shortcuts' });
    await within(dialog).findByRole('checkbox', { name: 'Viber' });
    expect(within(dialog).getAllByRole('checkbox')).toHaveLength(24);
    expect(dialog.querySelector('img[src="/icons/yahoo-mail.svg"]')).toBeTruthy();
    // Signed out, the account's list does not apply.
    expect(ticked('Zoom')).toBe(true);
    expect(ticked('Gmail')).toBe(false);
  });

  it("starts from the account's choice when signed in", async () => {
    mockApi();
    window.localStorage.setItem(SELECTED_ICONS_KEY, JSON.stringify(['Zoom']));
    renderDialog({ signedIn: true, savedOnAccount: ['Gmail'] });

    await screen.findByRole('checkbox', { name: 'Gmail' });
    expect(ticked('Gmail')).toBe(true);
    expect(ticked('Zoom')).toBe(false);
  });

  it("starts from this device's choice when the account has none", async () => {
    mockApi();
    window.localStorage.setItem(SELECTED_ICONS_KEY, JSON.stringify(['Zoom']));
    renderDialog({ signedIn: true, savedOnAccount: [] });

    await screen.findByRole('checkbox', { name: 'Zoom' });
    expect(ticked('Zoom')).toBe(true);
  });

  it('saves only on this device when signed out', async () => {
    const fetchMock = mockApi();
    const { onClose, onSaved } = renderDialog({ signedIn: false });

    fireEvent.click(await screen.findByRole('checkbox', { name: 'Zoom' }));
    fireEvent.click(screen.getByRole('checkbox', { name: 'Gmail' }));
    fireEvent.click(screen.getByRole('button', { name: 'Save' }));

    // In the list's order, whatever the order of the ticks.
    expect(storedNames()).toEqual(['Gmail', 'Zoom']);
    expect(onSaved).toHaveBeenCalledWith(['Gmail', 'Zoom']);
    expect(onClose).toHaveBeenCalledTimes(1);
    expect(accountSaves(fetchMock)).toEqual([]);
  });

  it('saves on this device and with the account when signed in', async () => {
    const fetchMock = mockApi({
      'PUT /api/account/shortcuts': { body: { shortcuts: ['Gmail', 'Slack'] } },
    });
    window.localStorage.setItem(SELECTED_ICONS_KEY, JSON.stringify(['Gmail']));
    const { onClose, onSaved } = renderDialog({ signedIn: true });

    fireEvent.click(await screen.findByRole('checkbox', { name: 'Slack' }));
    fireEvent.click(screen.getByRole('button', { name: 'Save' }));

    await waitFor(() => expect(onClose).toHaveBeenCalledTimes(1));
    expect(accountSaves(fetchMock)).toEqual([{ shortcuts: ['Gmail', 'Slack'] }]);
    expect(storedNames()).toEqual(['Gmail', 'Slack']);
    expect(onSaved).toHaveBeenCalledWith(['Gmail', 'Slack']);
  });

  it('says so when the account could not keep the choice, which this device still has', async () => {
    mockApi({
      'PUT /api/account/shortcuts': { status: 500, body: { error: 'internal', message: 'Something went wrong.' } },
    });
    const { onClose } = renderDialog({ signedIn: true });

    fireEvent.click(await screen.findByRole('checkbox', { name: 'Reddit' }));
    fireEvent.click(screen.getByRole('button', { name: 'Save' }));

    expect((await screen.findByRole('alert')).textContent).toBe(ACCOUNT_SAVE_FAILED);
    expect(storedNames()).toEqual(['Reddit']);
    expect(onClose).not.toHaveBeenCalled();
    expect((screen.getByRole('button', { name: 'Save' }) as HTMLButtonElement).disabled).toBe(false);
  });

  it('closes without saving on Cancel', async () => {
    mockApi();
    const { onClose } = renderDialog({ signedIn: false });

    fireEvent.click(await screen.findByRole('checkbox', { name: 'Reddit' }));
    fireEvent.click(screen.getByRole('button', { name: 'Cancel' }));

    expect(onClose).toHaveBeenCalledTimes(1);
    expect(storedNames()).toBeNull();
  });

  it('offers to try again when the sites cannot be loaded', async () => {
    mockApi({ 'GET /api/shortcuts': { status: 500, body: { error: 'internal', message: 'Oops' } } });
    renderDialog({ signedIn: false });

    expect(await screen.findByRole('button', { name: 'Try again' })).toBeTruthy();
  });
});

describe('SelectedShortcuts', () => {
  it("links to the chosen sites in a new tab and updates after a Save", async () => {
    mockApi();
    window.localStorage.setItem(SELECTED_ICONS_KEY, JSON.stringify(['YouTube']));
    render(<SelectedShortcuts />);

    const youtube = await screen.findByRole('link', { name: /^YouTube/ });
    expect(youtube.getAttribute('href')).toBe('https://example.com/YouTube');
    expect(youtube.getAttribute('target')).toBe('_blank');
    expect(youtube.getAttribute('rel')).toBe('noopener noreferrer');
    expect(screen.getAllByRole('link')).toHaveLength(1);

    fireEvent.click(screen.getByRole('button', { name: 'Select Additional Shortcuts' }));
    fireEvent.click(await screen.findByRole('checkbox', { name: 'Gmail' }));
    fireEvent.click(screen.getByRole('button', { name: 'Save' }));

    expect(screen.queryByRole('dialog')).toBeNull();
    const links = within(screen.getByRole('list', { name: 'Your shortcuts' })).getAllByRole('link');
    expect(links.map((link) => link.textContent)).toEqual(['YouTube', 'Gmail']);
  });

  it("shows the account's shortcuts to a signed-in member and saves the change to the account", async () => {
    const fetchMock = mockApi({
      'GET /api/auth/me': { body: { user: { id: 'u1', email: 'pat@example.com' } } },
      'PUT /api/account/shortcuts': { body: { shortcuts: ['Zoom', 'Slack'] } },
    });
    window.localStorage.setItem(SELECTED_ICONS_KEY, JSON.stringify(['YouTube']));
    render(
      <SessionProvider>
        <SelectedShortcuts names={['Slack']} />
      </SessionProvider>,
    );

    expect(await screen.findByRole('link', { name: /^Slack/ })).toBeTruthy();
    expect(screen.queryByRole('link', { name: /^YouTube/ })).toBeNull();

    fireEvent.click(screen.getByRole('button', { name: 'Select Additional Shortcuts' }));
    expect((await screen.findByRole('checkbox', { name: 'Slack' }) as HTMLInputElement).checked).toBe(true);
    fireEvent.click(screen.getByRole('checkbox', { name: 'Zoom' }));
    fireEvent.click(screen.getByRole('button', { name: 'Save' }));

    expect(await screen.findByRole('link', { name: /^Zoom/ })).toBeTruthy();
    expect(accountSaves(fetchMock)).toEqual([{ shortcuts: ['Zoom', 'Slack'] }]);
  });

  it("gives an account without shortcuts this device's picks, once, and starts the dialog from them", async () => {
    const fetchMock = mockApi({
      'GET /api/auth/me': { body: { user: { id: 'u-adopt', email: 'pat@example.com', shortcuts: [] } } },
      'PUT /api/account/shortcuts': (init) => ({ body: JSON.parse(String(init?.body)) }),
    });
    // Picked on /landing before signing up; a name the list no longer has is let go.
    window.localStorage.setItem(SELECTED_ICONS_KEY, JSON.stringify(['Zoom', 'Gone', 'Gmail']));
    const { rerender } = render(
      <SessionProvider>
        <SelectedShortcuts names={[]} />
      </SessionProvider>,
    );

    const links = await screen.findByRole('list', { name: 'Your shortcuts' });
    expect(within(links).getAllByRole('link').map((link) => link.textContent)).toEqual(['Gmail', 'Zoom']);
    await waitFor(() => expect(accountSaves(fetchMock)).toEqual([{ shortcuts: ['Gmail', 'Zoom'] }]));

    fireEvent.click(screen.getByRole('button', { name: 'Select Additional Shortcuts' }));
    await screen.findByRole('checkbox', { name: 'Zoom' });
    expect(ticked('Zoom')).toBe(true);
    expect(ticked('Gmail')).toBe(true);
    fireEvent.click(screen.getByRole('button', { name: 'Cancel' }));

    rerender(
      <SessionProvider>
        <SelectedShortcuts names={[]} key="again" />
      </SessionProvider>,
    );
    await screen.findByRole('list', { name: 'Your shortcuts' });
    expect(accountSaves(fetchMock)).toHaveLength(1);
  });

  it("keeps showing this device's picks when the account cannot take them, without a word", async () => {
    const fetchMock = mockApi({
      'GET /api/auth/me': { body: { user: { id: 'u-adopt-fails', email: 'pat@example.com', shortcuts: [] } } },
      'PUT /api/account/shortcuts': { status: 500, body: { error: 'internal', message: 'Something went wrong.' } },
    });
    window.localStorage.setItem(SELECTED_ICONS_KEY, JSON.stringify(['Slack']));
    render(
      <SessionProvider>
        <SelectedShortcuts names={[]} />
      </SessionProvider>,
    );

    expect(await screen.findByRole('link', { name: /^Slack/ })).toBeTruthy();
    await waitFor(() => expect(accountSaves(fetchMock)).toEqual([{ shortcuts: ['Slack'] }]));
    await act(async () => {});
    expect(screen.queryByRole('alert')).toBeNull();
    expect(screen.getByRole('link', { name: /^Slack/ })).toBeTruthy();
  });

  it('invites a choice when none is made yet', async () => {
    mockApi();
    render(<SelectedShortcuts />);

    expect(await screen.findByText('Pick the sites you use most to keep them one click away.')).toBeTruthy();
    expect(screen.queryByRole('link')).toBeNull();
  });
});
