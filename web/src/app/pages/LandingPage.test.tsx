import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { vi } from 'vitest';
import { browserLocation } from '../../lib/browser';
import { mockApi } from '../../test/fetch-mock';
import { renderApp } from '../testing';

const SIGNED_UP = { status: 201, body: { user: { id: 'u1', email: 'ann@example.com' } } };

async function signUpFromTheLanding() {
  await renderApp('/landing');
  fireEvent.click(await screen.findByRole('button', { name: 'Gmail' }));
  fireEvent.click(screen.getByRole('button', { name: 'Save Favorites' }));
  const dialog = screen.getByRole('dialog', { name: 'Create your account' });
  expect(within(dialog).getByText(/nothing is charged today/)).toBeTruthy();
  fireEvent.change(within(dialog).getByLabelText('Email'), { target: { value: 'ann@example.com' } });
  fireEvent.change(within(dialog).getByLabelText('Password'), { target: { value: 'secret123' } });
  fireEvent.click(within(dialog).getByRole('button', { name: 'Create Account' }));
  return dialog;
}

describe('LandingPage sign-up', () => {
  it('leads to the free 7-day trial checkout the blurb promises', async () => {
    const assign = vi.spyOn(browserLocation, 'assign').mockImplementation(() => {});
    const fetchMock = mockApi({
      'POST /api/auth/signup': SIGNED_UP,
      'POST /api/create-checkout.js': {
        body: { sessionId: 'demo_cs_1', trackingSessionId: 'hn_1', url: '/demo-checkout/demo_cs_1' },
      },
    });
    const dialog = await signUpFromTheLanding();

    await waitFor(() => expect(assign).toHaveBeenCalledExactlyOnceWith('/demo-checkout/demo_cs_1'));
    const call = fetchMock.mock.calls.find(([url]) => url === '/api/create-checkout.js');
    expect(JSON.parse(String(call?.[1]?.body))).toMatchObject({ source: 'direct_signup', isTrial: true });
    expect(within(dialog).getByRole('status').textContent).toBe('Taking you to the secure checkout...');
  });

  it('says so when the checkout cannot be opened, with the account made', async () => {
    mockApi({ 'POST /api/auth/signup': SIGNED_UP });
    const dialog = await signUpFromTheLanding();
    expect((await within(dialog).findByRole('alert')).textContent).toBe(
      'Failed to redirect to checkout page: Not found',
    );
  });
});
