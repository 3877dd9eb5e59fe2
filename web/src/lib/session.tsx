import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from 'react';
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

  const refresh = useCallback(async () => {
    try {
      setUser((await authApi.me()).user);
    } catch {
      setUser((current) => current ?? null);
    }
  }, []);

  useEffect(() => {
    void refresh();
  }, [refresh]);

  const signOut = useCallback(async () => {
    try {
      await authApi.logout();
    } finally {
      setUser(null);
    }
  }, []);

  const value = useMemo<Session>(() => ({ user, signedIn: setUser, signOut, refresh }), [user, signOut, refresh]);
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}

export function useSession(): Session {
  return useContext(SessionContext);
}
