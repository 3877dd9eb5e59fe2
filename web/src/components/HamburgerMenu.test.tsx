import { fireEvent, render, screen, within } from '@testing-library/react';
import { createMemoryRouter, RouterProvider } from 'react-router';
import { SessionProvider } from '../lib/session';
import { mockApi } from '../test/fetch-mock';
import { Header } from './Header';

const LEGAL_ENTRIES = ['Privacy Policy', 'Terms & Conditions', 'Refund Policy', 'Contact Us'];

/** The header as the app shows it to a signed-in member, admin or not, with /admin behind it. */
async function renderSignedIn(admin: boolean) {
  mockApi({
    'GET /api/auth/me': { body: { user: { id: 'u1', email: 'ann@example.com', hasPassword: true, admin } } },
  });
  const router = createMemoryRouter(
    [
      {
        path: '*',
        element: <Header />,
      },
    ],
    { initialEntries: ['/'] },
  );
  render(
    <SessionProvider>
      <RouterProvider router={router} />
    </SessionProvider>,
  );
  await screen.findByText('ann@example.com');
  return { router, button: screen.getByRole('button', { name: 'Menu' }) };
}

function renderLanding() {
  mockApi({
    'GET /api/legal/privacy': { body: { slug: 'privacy', title: 'Privacy Policy', body: 'We keep **little**.' } },
  });
  const router = createMemoryRouter([{ path: '/landing', element: <Header /> }], { initialEntries: ['/landing'] });
  render(<RouterProvider router={router} />);
  return screen.getByRole('button', { name: 'Menu' });
}

function header() {
  return screen.getByRole('banner');
}

describe("the header's menu", () => {
  it('opens the four legal dialogs', async () => {
    const button = renderLanding();
    expect(button.getAttribute('aria-expanded')).toBe('false');

    fireEvent.click(button);
    expect(button.getAttribute('aria-expanded')).toBe('true');
    const menu = within(header()).getByRole('menu', { name: 'Menu' });
    expect(within(menu).getAllByRole('menuitem').map((item) => item.textContent)).toEqual([
      'Privacy Policy',
      'Terms & Conditions',
      'Refund Policy',
      'Contact Us',
    ]);
    expect(document.activeElement).toBe(within(menu).getByRole('menuitem', { name: 'Privacy Policy' }));

    fireEvent.click(within(menu).getByRole('menuitem', { name: 'Privacy Policy' }));
    expect(within(header()).queryByRole('menu')).toBeNull();
    const dialog = screen.getByRole('dialog', { name: 'Privacy Policy' });
    expect(await within(dialog).findByText('little')).toBeTruthy();

    fireEvent.click(within(dialog).getByRole('button', { name: 'Close' }));
    expect(screen.queryByRole('dialog')).toBeNull();
    expect(document.activeElement).toBe(button);
  });

  it('moves with the arrow keys and closes on Escape, back on its button', () => {
    const button = renderLanding();
    fireEvent.keyDown(button, { key: 'ArrowDown' });
    const items = within(header()).getAllByRole('menuitem');
    expect(document.activeElement).toBe(items[0]);
    fireEvent.keyDown(items[0], { key: 'ArrowDown' });
    expect(document.activeElement).toBe(items[1]);
    fireEvent.keyDown(items[1], { key: 'End' });
    expect(document.activeElement).toBe(items[3]);
    fireEvent.keyDown(items[3], { key: 'ArrowDown' });
    expect(document.activeElement).toBe(items[0]);
    fireEvent.keyDown(items[0], { key: 'ArrowUp' });
    expect(document.activeElement).toBe(items[3]);

    fireEvent.keyDown(items[3], { key: 'Escape' });
    expect(within(header()).queryByRole('menu')).toBeNull();
    expect(button.getAttribute('aria-expanded')).toBe('false');
    expect(document.activeElement).toBe(button);
  });

  it('closes on a click elsewhere and on a second click of its button', () => {
    const button = renderLanding();
    fireEvent.click(button);
    fireEvent.mouseDown(document.body);
    expect(within(header()).queryByRole('menu')).toBeNull();

    fireEvent.click(button);
    expect(within(header()).getByRole('menu')).toBeTruthy();
    fireEvent.click(button);
    expect(within(header()).queryByRole('menu')).toBeNull();
  });

  it("offers an admin the dashboard above the legal entries, and keeps the keys' order", async () => {
    const { router, button } = await renderSignedIn(true);
    fireEvent.keyDown(button, { key: 'ArrowDown' });
    const menu = within(header()).getByRole('menu', { name: 'Menu' });
    const items = within(menu).getAllByRole('menuitem');
    expect(items.map((item) => item.textContent)).toEqual(['Dashboard', ...LEGAL_ENTRIES]);
    const dashboard = within(menu).getByRole('menuitem', { name: 'Dashboard' });
    expect(dashboard.getAttribute('href')).toBe('/admin');
    expect(document.activeElement).toBe(dashboard);

    // The arrows, Home and End go through all five entries.
    fireEvent.keyDown(dashboard, { key: 'ArrowDown' });
    expect(document.activeElement).toBe(items[1]);
    fireEvent.keyDown(items[1], { key: 'End' });
    expect(document.activeElement).toBe(items[4]);
    fireEvent.keyDown(items[4], { key: 'ArrowDown' });
    expect(document.activeElement).toBe(dashboard);
    fireEvent.keyDown(dashboard, { key: 'ArrowUp' });
    expect(document.activeElement).toBe(items[4]);
    fireEvent.keyDown(items[4], { key: 'Home' });
    expect(document.activeElement).toBe(dashboard);
    fireEvent.keyDown(dashboard, { key: 'Escape' });
    expect(within(header()).queryByRole('menu')).toBeNull();
    expect(document.activeElement).toBe(button);

    // Arrow Up on the button starts at the last entry; the link opens the dashboard and closes the menu.
    fireEvent.keyDown(button, { key: 'ArrowUp' });
    expect(document.activeElement).toBe(within(header()).getByRole('menuitem', { name: 'Contact Us' }));
    fireEvent.click(within(header()).getByRole('menuitem', { name: 'Dashboard' }));
    expect(router.state.location.pathname).toBe('/admin');
    expect(within(header()).queryByRole('menu')).toBeNull();
  });

  it('never shows the dashboard to a member who is no admin', async () => {
    const { button } = await renderSignedIn(false);
    fireEvent.click(button);
    const menu = within(header()).getByRole('menu', { name: 'Menu' });
    expect(within(menu).getAllByRole('menuitem').map((item) => item.textContent)).toEqual(LEGAL_ENTRIES);
    expect(within(header()).queryByRole('link', { name: 'Dashboard' })).toBeNull();
    expect(within(menu).queryByRole('separator')).toBeNull();
  });
});
