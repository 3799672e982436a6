
CREATE SCHEMA occusim_release_0_1_0;

CREATE TABLE occusim_release_0_1_0.episodes (
    id character varying(64) NOT NULL,
    task_id character varying(200) NOT NULL,
    scenario_id character varying(200) NOT NULL,
    status character varying(16) NOT NULL,
    world_model character varying(300) NOT NULL,
    mode character varying(16) NOT NULL,
    faults json NOT NULL,
    initial_state json NOT NULL,
    state json NOT NULL,
    step_count integer NOT NULL,
    final_answer text,
    tenant character varying(200),
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    closed_at timestamp with time zone
);

CREATE TABLE occusim_release_0_1_0.judgments (
    id integer NOT NULL,
    episode_id character varying(64) NOT NULL,
    verdict json NOT NULL,
    judge_model character varying(300),
    prompt_version character varying(100),
    score double precision,
    passed boolean,
    created_at timestamp with time zone NOT NULL
);

CREATE SEQUENCE occusim_release_0_1_0.judgments_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE occusim_release_0_1_0.judgments_id_seq OWNED BY occusim_release_0_1_0.judgments.id;

CREATE TABLE occusim_release_0_1_0.steps (
    id integer NOT NULL,
    episode_id character varying(64) NOT NULL,
    step_index integer NOT NULL,
    tool character varying(200) NOT NULL,
    arguments json NOT NULL,
    observation json,
    is_error boolean NOT NULL,
    true_observation json,
    fault json,
    error text,
    state_patch json NOT NULL,
    state_hash character varying(64) NOT NULL,
    prompt_tokens integer NOT NULL,
    completion_tokens integer NOT NULL,
    cost_usd double precision,
    calls integer NOT NULL,
    cached_calls integer NOT NULL,
    latency_ms double precision NOT NULL,
    created_at timestamp with time zone NOT NULL
);

CREATE SEQUENCE occusim_release_0_1_0.steps_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE occusim_release_0_1_0.steps_id_seq OWNED BY occusim_release_0_1_0.steps.id;

ALTER TABLE ONLY occusim_release_0_1_0.judgments ALTER COLUMN id SET DEFAULT nextval('occusim_release_0_1_0.judgments_id_seq'::regclass);

ALTER TABLE ONLY occusim_release_0_1_0.steps ALTER COLUMN id SET DEFAULT nextval('occusim_release_0_1_0.steps_id_seq'::regclass);

INSERT INTO occusim_release_0_1_0.episodes VALUES ('ep-submitted', 'triage/chest-pain', 'triage_nurse', 'judged', 'scripted/triage', 'tracked', '{"mode": "E3", "count": 2, "duration": 1, "seed": 7}', '{"patients": [{"id": "P1", "priority": 3, "name": "Zo\u00eb"}], "queue": []}', '{"patients": [{"id": "P1", "priority": 1, "name": "Zo\u00eb"}], "queue": []}', 3, 'P1 is priority 1', 'acme', '2026-11-30 09:00:00.123456+00', '2026-12-01 15:00:00.357344+00', '2026-11-30 09:00:04.123456+00');
INSERT INTO occusim_release_0_1_0.episodes VALUES ('ep-open', 'customs/declaration', 'customs_officer', 'open', '', 'history', '{"mode": "E0", "count": 2, "duration": 2, "seed": 0}', '{}', '{}', 1, NULL, NULL, '2026-11-30 09:05:00.123456+00', '2026-11-30 09:06:00.123456+00', NULL);

INSERT INTO occusim_release_0_1_0.judgments VALUES (1, 'ep-submitted', '{"score": 0.75, "passed": true, "items": [{"id": "a", "met": true}]}', 'scripted/judge', 'v1', 0.75, true, '2026-12-01 15:00:00.357344+00');

INSERT INTO occusim_release_0_1_0.steps VALUES (1, 'ep-submitted', 0, 'get_patient', '{"patient_id": "P1"}', '{"id": "P1", "priority": 3}', false, NULL, NULL, NULL, '[]', 'a1', 120, 30, 0.002, 2, 1, 12.5, '2026-11-30 09:00:01.123456+00');
INSERT INTO occusim_release_0_1_0.steps VALUES (2, 'ep-submitted', 1, 'set_priority', '{"patient_id": "P1", "priority": 1}', '{"ok": true}', false, '{"ok": true, "previous": 3}', '{"kind": "implicit", "label": "drop_fields", "detail": "/previous"}', NULL, '[{"op": "replace", "path": "/patients/0/priority", "value": 1}]', 'b2', 200, 40, NULL, 1, 0, 30, '2026-11-30 09:00:02.123456+00');
INSERT INTO occusim_release_0_1_0.steps VALUES (3, 'ep-submitted', 2, 'list_patients', '{}', '{"error": {"type": "http_500", "message": "upstream"}}', true, NULL, '{"kind": "explicit", "label": "http_500", "detail": ""}', NULL, '[]', 'b2', 0, 0, NULL, 0, 0, 0, '2026-11-30 09:00:03.123456+00');
INSERT INTO occusim_release_0_1_0.steps VALUES (4, 'ep-open', 0, 'inspect', '{"crate": 4}', NULL, true, NULL, NULL, 'invalid arguments for ''inspect'': crate: 4 is not of type ''string''', '[]', '', 0, 0, NULL, 0, 0, 0, '2026-11-30 09:06:00.123456+00');

SELECT pg_catalog.setval('occusim_release_0_1_0.judgments_id_seq', 1, true);

SELECT pg_catalog.setval('occusim_release_0_1_0.steps_id_seq', 4, true);

ALTER TABLE ONLY occusim_release_0_1_0.episodes
    ADD CONSTRAINT episodes_pkey PRIMARY KEY (id);

ALTER TABLE ONLY occusim_release_0_1_0.judgments
    ADD CONSTRAINT judgments_pkey PRIMARY KEY (id);

ALTER TABLE ONLY occusim_release_0_1_0.steps
    ADD CONSTRAINT steps_pkey PRIMARY KEY (id);

ALTER TABLE ONLY occusim_release_0_1_0.steps
    ADD CONSTRAINT uq_steps_episode_index UNIQUE (episode_id, step_index);

CREATE INDEX ix_episodes_status_updated ON occusim_release_0_1_0.episodes USING btree (status, updated_at);

CREATE INDEX ix_episodes_tenant ON occusim_release_0_1_0.episodes USING btree (tenant);

CREATE INDEX ix_judgments_episode ON occusim_release_0_1_0.judgments USING btree (episode_id);

ALTER TABLE ONLY occusim_release_0_1_0.judgments
    ADD CONSTRAINT judgments_episode_id_fkey FOREIGN KEY (episode_id) REFERENCES occusim_release_0_1_0.episodes(id) ON DELETE CASCADE;

ALTER TABLE ONLY occusim_release_0_1_0.steps
    ADD CONSTRAINT steps_episode_id_fkey FOREIGN KEY (episode_id) REFERENCES occusim_release_0_1_0.episodes(id) ON DELETE CASCADE;

