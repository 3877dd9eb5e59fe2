import { render, screen, waitFor } from '@testing-library/react';
import { vi } from 'vitest';
import { PublicConfigProvider } from '../../lib/public-config';
import { defaultApi, mockApi } from '../../test/fetch-mock';
import { initialChatState } from './chat-state';
import { ChatPanel, LIBRARY_NOTE, type SidebarKind } from './ChatPanel';

function renderPanel() {
  render(
    <PublicConfigProvider>
      <ChatPanel
        productName="HelpNow"
        assistantName="Emma"
        state={initialChatState()}
        busy={false}
        connection="connected"
        connectionError={null}
        notice={null}
        onSend={vi.fn<(text: string) => Promise<boolean>>(async () => true)}
        onStop={vi.fn<() => void>()}
        onNewChat={vi.fn<() => void>()}
        onReconnect={vi.fn<() => void>()}
        sidebar={null}
        onToggleSidebar={vi.fn<(kind: SidebarKind) => void>()}
        sidebarIds={{ tasks: 'tasks', history: 'history' }}
      />
    </PublicConfigProvider>,
  );
}

function publicConfig(aiMode: string | undefined) {
  const base = (defaultApi['GET /api/public-config'] as { body: Record<string, unknown> }).body;
  return { 'GET /api/public-config': { body: { ...base, aiMode } } };
}

describe('ChatPanel', () => {
  it('says once, above the conversation, that answers come from the help library when the AI is offline', async () => {
    const fetchMock = mockApi(publicConfig('offline'));
    renderPanel();
    await waitFor(() => expect(fetchMock).toHaveBeenCalled());
    expect(await screen.findByText(LIBRARY_NOTE)).toBeTruthy();
    expect(screen.getAllByTestId('chat-library-note')).toHaveLength(1);
    // Above the conversation, not inside it.
    expect(screen.getByRole('log', { name: 'Conversation' }).textContent).not.toContain(LIBRARY_NOTE);
  });

  it('shows no notice with a live assistant, nor before the server has said', async () => {
    const fetchMock = mockApi(publicConfig('live'));
    renderPanel();
    expect(screen.queryByText(LIBRARY_NOTE)).toBeNull();
    await waitFor(() => expect(fetchMock).toHaveBeenCalled());
    // Let the configuration's answer land.
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(screen.queryByText(LIBRARY_NOTE)).toBeNull();
  });
});
