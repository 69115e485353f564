SELECT name, value FROM {{ source('run_option') }}
