/** The sign-in screen: email and password; the client stores the session on the device. */
import type { FieldchartClient } from '@fieldchart/client';
import { h, messageOf } from '../dom.ts';

export function signInView(client: FieldchartClient, onSignedIn: () => void): HTMLElement {
  const error = h('p', { id: 'sign-in-error', class: 'error', role: 'alert' });
  const email = h('input', { id: 'email', name: 'email', type: 'email', autocomplete: 'username', required: true, 'aria-describedby': 'sign-in-error' });
  const password = h('input', { id: 'password', name: 'password', type: 'password', autocomplete: 'current-password', required: true, 'aria-describedby': 'sign-in-error' });
  const submit = h('button', { type: 'submit' }, 'Sign in');
  const form = h(
    'form',
    { class: 'card', 'aria-labelledby': 'sign-in-title' },
    h('h1', { id: 'sign-in-title' }, 'Sign in to Fieldchart'),
    h('label', { for: 'email' }, 'Email'),
    email,
    h('label', { for: 'password' }, 'Password'),
    password,
    submit,
    error,
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    error.textContent = '';
    if (!navigator.onLine) {
      error.textContent = 'Signing in needs a connection. Try again when you are online.';
      return;
    }
    submit.disabled = true;
    submit.textContent = 'Signing in…';
    client.signIn({ email: email.value.trim(), password: password.value }).then(
      () => {
        password.value = '';
        onSignedIn();
      },
      (err: unknown) => {
        error.textContent = messageOf(err);
        submit.disabled = false;
        submit.textContent = 'Sign in';
        password.focus();
      },
    );
  });
  queueMicrotask(() => email.focus());
  return h('main', { id: 'main' }, form);
}
