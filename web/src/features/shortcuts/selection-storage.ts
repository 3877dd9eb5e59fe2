// The spec's local storage key for the names of the selected shortcuts.
export const SELECTED_ICONS_KEY = 'selectedIcons';

export function loadSelectedIcons(): string[] {
  try {
    const stored: unknown = JSON.parse(window.localStorage.getItem(SELECTED_ICONS_KEY) ?? '[]');
    return Array.isArray(stored) ? stored.filter((name): name is string => typeof name === 'string') : [];
  } catch {
    return [];
  }
}

export function saveSelectedIcons(names: string[]): void {
  try {
    window.localStorage.setItem(SELECTED_ICONS_KEY, JSON.stringify(names));
  } catch {
    // Storage can be full or blocked (private mode); the selection still works for this visit.
  }
}
