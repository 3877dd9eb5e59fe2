import { createContext, useCallback, useContext, useEffect, useMemo, useRef, useState, type ReactNode } from 'react';
import { authApi, type User } from './auth';
import { accessOf, checkSubscription, forgetSubscriptionStatus } from './subscription';

export type Session = {
  /** `undefined` while the server has not answered yet; `null` for a visitor. */
  user: User | null | undefined;
  /**
   * The server could not be reached: `user` is what it said last (kept on this device), and the
   * page says so instead of showing a member as signed out.
   */
  unreachable: boolean;
  /** After a sign-in or sign-up answered with the user. */
  signedIn: (user: User) => void;
  signOut: () => Promise<void>;
  /** Asks the server again (after a token sign-in, say). */
  refresh: () => Promise<void>;
  /**
   * The spec's subscription check for a member without access (a payment confirmed while the
   * page is open): at most once per 15 s, and the full account once access arrives.
   */
  checkAccess: () => Promise<void>;
};

const SessionContext = createContext<Session>({
  user: null,
  unreachable: false,
  signedIn: () => {},
  signOut: async () => {},
  refresh: async () => {},
  checkAccess: async () => {},
});

/** The spec's `user-info` key: what the server said of the member last (no secret in it). */
export const USER_INFO_KEY = 'user-info';
/** While the server cannot be reached, it is asked again this often. */
export const RETRY_MS = 15_000;

function rememberUser(user: User | null): void {
  try {
    if (user === null) window.localStorage.removeItem(USER_INFO_KEY);
    else {
      // Only what the page shows while offline: no funnel text, nothing secret.
      const { id, email, hasPassword, access, shortcuts } = user;
      window.localStorage.setItem(USER_INFO_KEY, JSON.stringify({ data: { id, email, hasPassword, access, shortcuts } }));
    }
  } catch {
    // Storage blocked or full: only the offline view is lost.
  }
}

function lastKnownUser(): User | null {
  try {
    const raw = window.localStorage.getItem(USER_INFO_KEY);
    const data = raw === null ? null : (JSON.parse(raw) as { data?: User }).data;
    return data && typeof data.id === 'string' && typeof data.email === 'string' ? data : null;
  } catch {
    return null;
  }
}

/** Who is signed in, as the server says: the session cookie is HttpOnly, so only it can tell. */
export function SessionProvider({ children }: { children: ReactNode }) {
  const [user, setUser] = useState<User | null | undefined>(undefined);
  const [unreachable, setUnreachable] = useState(false);
  // Bumped by every sign-in and sign-out: an answer of `/api/auth/me` asked before one of them is
  // stale (a slow answer must not sign back in a member who just signed out).
  const generation = useRef(0);
  const userRef = useRef(user);
  userRef.current = user;

  const refresh = useCallback(async () => {
    const asked = generation.current;
    try {
      const me = (await authApi.me()).user;
      if (generation.current !== asked) return;
      setUser(me);
      setUnreachable(false);
      rememberUser(me);
    } catch {
      if (generation.current !== asked) return;
      // Not an answer: a member stays who they were (here, or on this device last time).
      setUser((current) => current ?? lastKnownUser());
      setUnreachable(true);
    }
  }, []);

  useEffect(() => {
    void refresh();
  }, [refresh]);

  // Unreachable: asked again when the browser is back online, and every 15 s meanwhile.
  useEffect(() => {
    if (!unreachable) return undefined;
    const again = () => void refresh();
    const timer = setInterval(again, RETRY_MS);
    window.addEventListener('online', again);
    return () => {
      clearInterval(timer);
      window.removeEventListener('online', again);
    };
  }, [unreachable, refresh]);

  const checkAccess = useCallback(async () => {
    const current = userRef.current;
    if (!current || current.access?.hasAccess) return;
    const asked = generation.current;
    try {
      const access = accessOf(await checkSubscription(current.id));
      if (generation.current !== asked || userRef.current?.id !== current.id) return;
      if (access.hasAccess) {
        // Access arrived (a webhook while the page was open): the whole account, as the server has it.
        setUser((latest) => (latest && latest.id === current.id ? { ...latest, access } : latest));
        await refresh();
      }
    } catch {
      // The check failed and nothing was known: the page keeps what it shows.
    }
  }, [refresh]);

  const signedIn = useCallback((next: User) => {
    generation.current += 1;
    setUser(next);
    setUnreachable(false);
  }, []);

  const signOut = useCallback(async () => {
    generation.current += 1;
    try {
      await authApi.logout();
    } finally {
      generation.current += 1;
      setUser(null);
      rememberUser(null);
      forgetSubscriptionStatus();
    }
  }, []);

  const value = useMemo<Session>(
    () => ({ user, unreachable, signedIn, signOut, refresh, checkAccess }),
    [user, unreachable, signedIn, signOut, refresh, checkAccess],
  );
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}

export function useSession(): Session {
  return useContext(SessionContext);
}
