import { createContext, useCallback, useContext, useEffect, useMemo, useRef, useState, type ReactNode } from 'react';
import { authApi, type User } from './auth';

export type Session = {
  /** `undefined` while the server has not answered yet; `null` for a visitor. */
  user: User | null | undefined;
  /** After a sign-in or sign-up answered with the user. */
  signedIn: (user: User) => void;
  signOut: () => Promise<void>;
  /** Asks the server again (after a token sign-in, say). */
  refresh: () => Promise<void>;
};

const SessionContext = createContext<Session>({
  user: null,
  signedIn: () => {},
  signOut: async () => {},
  refresh: async () => {},
});

/** Who is signed in, as the server says: the session cookie is HttpOnly, so only it can tell. */
export function SessionProvider({ children }: { children: ReactNode }) {
  const [user, setUser] = useState<User | null | undefined>(undefined);
  // Bumped by every sign-in and sign-out: an answer of `/api/auth/me` asked before one of them is
  // stale (a slow answer must not sign back in a member who just signed out).
  const generation = useRef(0);

  const refresh = useCallback(async () => {
    const asked = generation.current;
    try {
      const me = (await authApi.me()).user;
      if (generation.current === asked) setUser(me);
    } catch {
      if (generation.current === asked) setUser((current) => current ?? null);
    }
  }, []);

  useEffect(() => {
    void refresh();
  }, [refresh]);

  const signedIn = useCallback((next: User) => {
    generation.current += 1;
    setUser(next);
  }, []);

  const signOut = useCallback(async () => {
    generation.current += 1;
    try {
      await authApi.logout();
    } finally {
      generation.current += 1;
      setUser(null);
    }
  }, []);

  const value = useMemo<Session>(() => ({ user, signedIn, signOut, refresh }), [user, signedIn, signOut, refresh]);
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}

export function useSession(): Session {
  return useContext(SessionContext);
}
