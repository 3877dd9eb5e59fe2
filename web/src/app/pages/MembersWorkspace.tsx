import { useCallback, useId, useState } from 'react';
import { usePublicConfig } from '../../lib/public-config';
import { recordEvent } from '../../lib/analytics';
import { ChatHistoryPanel } from '../../features/chat/ChatHistoryPanel';
import { ChatPanel, type SidebarKind } from '../../features/chat/ChatPanel';
import { useMemberChat } from '../../features/chat/useMemberChat';
import type { Task } from '../../features/tasks/api';
import { TaskPanel } from '../../features/tasks/TaskPanel';
import { narrowScreen } from '../../features/members/narrow-screen';
import { Sidebar } from '../../features/members/Sidebar';
import '../../features/members/workspace.css';

type MembersWorkspaceProps = {
  /** A signed-in member with an active trial or subscription: the chat connects. */
  hasAccess: boolean;
  signedIn: boolean;
  /** Opens the upgrade modal (the trial prompt). */
  onUpgradeRequired: () => void;
  /** The server found no active trial or subscription (it may have ended while the page was open). */
  onAccessLost: () => void;
};

/**
 * The chat with its two sidebars, Task List and Chat History, one open at a time. Visitors and
 * members without access see the chat too; what needs access opens the upgrade modal instead.
 */
export function MembersWorkspace({ hasAccess, signedIn, onUpgradeRequired, onAccessLost }: MembersWorkspaceProps) {
  const { productName, assistantName } = usePublicConfig();
  const [openSidebar, setOpenSidebar] = useState<SidebarKind | null>(null);
  const [historyVersion, setHistoryVersion] = useState(0);
  const tasksId = useId();
  const historyId = useId();

  const chat = useMemberChat({
    enabled: hasAccess,
    onUpgradeRequired: onAccessLost,
    onReplyDone: useCallback(() => setHistoryVersion((version) => version + 1), []),
  });

  // Tasks need a sign-in; the history is the chat's, which needs access (spec sections 4 and 6).
  const allowed = (kind: SidebarKind) => (kind === 'tasks' ? signedIn : hasAccess);
  const sidebar = openSidebar !== null && allowed(openSidebar) ? openSidebar : null;

  function toggleSidebar(kind: SidebarKind) {
    if (!allowed(kind)) {
      onUpgradeRequired();
      return;
    }
    if (sidebar === kind) {
      setOpenSidebar(null);
      return;
    }
    setOpenSidebar(kind);
    recordEvent('sidebar_opened', { sidebar: kind });
  }

  function send(text: string): Promise<boolean> {
    if (!hasAccess) {
      onUpgradeRequired();
      return Promise.resolve(false);
    }
    return chat.send(text);
  }

  function askForHelp(task: Task) {
    if (!hasAccess) {
      onUpgradeRequired();
      return;
    }
    recordEvent('feature_use', { feature: 'task_help' });
    // On a phone the sidebar covers the chat: it steps aside once the chat has work to show.
    if (narrowScreen()) setOpenSidebar(null);
    void chat.askTaskHelp(task.id);
  }

  async function openChat(chatId: string) {
    if (await chat.openChat(chatId)) setOpenSidebar(null);
  }

  function startNewConversation() {
    chat.newChat();
    if (narrowScreen()) setOpenSidebar(null);
  }

  return (
    <div className={sidebar ? 'members-workspace members-workspace--sidebar' : 'members-workspace'}>
      {sidebar === 'tasks' && (
        <Sidebar id={tasksId} label="Task List" onClose={() => setOpenSidebar(null)}>
          <TaskPanel onAskForHelp={askForHelp} helpDisabled={chat.busy} />
        </Sidebar>
      )}
      {sidebar === 'history' && (
        <Sidebar id={historyId} label="Chat History" onClose={() => setOpenSidebar(null)}>
          <ChatHistoryPanel
            reloadKey={historyVersion}
            openChatId={chat.state.chatId}
            onOpen={(chatId) => void openChat(chatId)}
            onNewConversation={startNewConversation}
            onDeleted={chat.forgetChat}
          />
        </Sidebar>
      )}
      <ChatPanel
        productName={productName}
        assistantName={assistantName}
        state={chat.state}
        busy={chat.busy}
        connection={chat.connection}
        connectionError={chat.connectionError}
        notice={chat.notice}
        onSend={send}
        onStop={chat.stop}
        onNewChat={chat.newChat}
        onReconnect={chat.reconnect}
        sidebar={sidebar}
        onToggleSidebar={toggleSidebar}
        sidebarIds={{ tasks: tasksId, history: historyId }}
      />
    </div>
  );
}
