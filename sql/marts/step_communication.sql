SELECT * FROM {{ ref('int_step_communication') }}
