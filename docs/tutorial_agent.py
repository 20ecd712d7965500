"""An ensemble of small MLPs, each with a fixed random prior network added to its output."""
import jax
import jax.numpy as jnp
import optax

from decision_bench.agents import Agent

NAME = "my_prior_mlps"


def make_agent(spec, num_members=10, width=32, prior_scale=1.0, l2=1.0, learning_rate=1e-2, num_steps=300):
    optimizer = optax.adam(learning_rate)
    sizes = [(spec.input_dim, width), (width, spec.num_classes)]

    def network(key):  # one member: [(w1, b1), (w2, b2)], LeCun-normal weights
        keys = jax.random.split(key, len(sizes))
        return [(jax.random.normal(k, s) / jnp.sqrt(s[0]), jnp.zeros(s[1])) for k, s in zip(keys, sizes)]

    def forward(net, x):  # x: [n, d] -> [n, C]
        (w1, b1), (w2, b2) = net
        return jax.nn.relu(x @ w1 + b1) @ w2 + b2

    def logits(state, m, x):  # member m's trained network plus its scaled prior network
        params, priors = jax.tree.map(lambda a: a[m], (state[0], state[2]))
        return forward(params, x) + prior_scale * forward(priors, x)

    def init(key):
        k_params, k_priors = jax.random.split(key)
        params = jax.vmap(network)(jax.random.split(k_params, num_members))
        priors = jax.vmap(network)(jax.random.split(k_priors, num_members))
        return params, optimizer.init(params), priors

    def update(key, state, batch):
        params, opt_state, priors = state

        def loss(params):
            members = jnp.arange(num_members)
            out = jax.vmap(lambda m: logits((params, None, priors), m, batch.x))(members)  # [M, B, C]
            nll = optax.softmax_cross_entropy_with_integer_labels(out, batch.y[None]).mean(1).sum()
            decay = sum(jnp.sum(w ** 2) for w, _ in params)  # the weights' L2, decayed as data arrive
            return nll + l2 * decay / jnp.maximum(batch.num_seen, 1.0)

        updates, opt_state = optimizer.update(jax.grad(loss)(params), opt_state)
        return optax.apply_updates(params, updates), opt_state, priors

    def sample_logits(key, state, x):  # ONE member for all n inputs: joint predictions
        return logits(state, jax.random.randint(key, (), 0, num_members), x)

    def member_logits(state, x):  # every member at once: exact evaluation
        return jax.vmap(lambda m: logits(state, m, x))(jnp.arange(num_members))

    return Agent(init, update, sample_logits, member_logits, num_steps=num_steps, name=NAME)
