import Markdown, { type Components } from 'react-markdown';

// react-markdown builds React elements, never innerHTML: HTML in a reply shows as the text it is,
// and unsafe URLs (javascript: and the like) are dropped. Links leave the chat for a new tab
// without handing it this window.
const components: Components = {
  a: ({ href, children }) => (
    <a href={href} target="_blank" rel="noopener noreferrer">
      {children}
    </a>
  ),
};

/** An assistant reply: Markdown (steps, lists, code, links) rendered safely. */
export function AssistantText({ text }: { text: string }) {
  return (
    <div className="member-chat__markdown">
      <Markdown components={components}>{text}</Markdown>
    </div>
  );
}
