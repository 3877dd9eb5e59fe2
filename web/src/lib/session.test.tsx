import { act, render, screen } from '@testing-library/react';
import { useEffect } from 'react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { mockApi } from '../test/fetch-mock';
import { SessionProvider, useSession, type Session } from './session';

const MEMBER = { id: 'u1', email: 'ann@example.com', hasPassword: true };

let session: Session | undefined;

function Probe() {
  const current = useSession();
  useEffect(() => {
    session = current;
  });
  const user = current.user;
  return <p>{user === undefined ? 'asking' : user === null ? 'signed out' : user.email}</p>;
}

afterEach(() => {
  vi.unstubAllGlobals();
  session = undefined;
});

describe('SessionProvider', () => {
  it('does not let a slow answer of /api/auth/me sign back in a member who signed out meanwhile', async () => {
    let calls = 0;
    let answerMe: (() => void) | undefined;
    mockApi({
      // The first answer comes at once; the second (a refresh) only when the test says.
      'GET /api/auth/me': () => {
        calls += 1;
        const reply = { body: { user: MEMBER } };
        if (calls === 1) return reply;
        return new Promise((resolve) => {
          answerMe = () => resolve(reply);
        });
      },
      'POST /api/auth/logout': { body: null },
    });
    render(
      <SessionProvider>
        <Probe />
      </SessionProvider>,
    );
    expect(await screen.findByText('ann@example.com')).toBeTruthy();

    // A refresh is asked (the members page asks for the access facts), and before its answer comes,
    // the member signs out.
    let refreshed: Promise<void> | undefined;
    act(() => {
      refreshed = session?.refresh();
    });
    await act(async () => {
      await session?.signOut();
    });
    expect(screen.getByText('signed out')).toBeTruthy();

    // The stale answer arrives: it changes nothing.
    await act(async () => {
      answerMe?.();
      await refreshed;
    });
    expect(screen.getByText('signed out')).toBeTruthy();
  });

  it('keeps the last known member while the server cannot be reached, and asks again when back online', async () => {
    window.localStorage.setItem('user-info', JSON.stringify({ data: MEMBER }));
    let up = false;
    mockApi({
      'GET /api/auth/me': () =>
        up ? { body: { user: { ...MEMBER, email: 'ann@example.com' } } } : { status: 502, body: {} },
    });
    render(
      <SessionProvider>
        <Probe />
      </SessionProvider>,
    );
    expect(await screen.findByText('ann@example.com')).toBeTruthy();
    // The remembered member shows at once; the failed check comes after.
    await vi.waitFor(() => expect(session?.unreachable).toBe(true));

    up = true;
    await act(async () => {
      window.dispatchEvent(new Event('online'));
    });
    await vi.waitFor(() => expect(session?.unreachable).toBe(false));
    expect(screen.getByText('ann@example.com')).toBeTruthy();
  });

  it('shows a visitor as signed out when nothing is known and the server cannot be reached', async () => {
    mockApi({ 'GET /api/auth/me': { status: 502, body: {} } });
    render(
      <SessionProvider>
        <Probe />
      </SessionProvider>,
    );
    expect(await screen.findByText('signed out')).toBeTruthy();
  });
});
